"""`.vllm-configurator.yaml`: the repository's settings for `check` (schemas/lint-config.schema.json).

Found from the first target upwards (`.vllm-configurator.yaml`, then `.yml`, in each folder up to the
filesystem root), or named with `--config`. Paths in it (`ignorePaths`, a rule's `include` /
`exclude`) are gitignore-style globs relative to the folder that holds the file, matched with
`pathspec` (the matcher yamllint uses for its own `ignore:` setting).

The settings are plain dataclasses, so that a run with no config file imports no validation library; a file is
validated with pydantic when it is read (load_config), and schemas/lint-config.schema.json is generated from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Literal

from configurator.errors import InputError
from configurator.record import doc

CONFIG_NAMES = (".vllm-configurator.yaml", ".vllm-configurator.yml")
MAX_CONFIG_BYTES = 1 << 20

Level = Literal["off", "error", "warning", "info"]


@dataclass(kw_only=True)
class RuleConfig:
    """One rule's settings: its severity (or off) and the paths it runs on."""

    __pydantic_config__: ClassVar[dict] = {"extra": "forbid"}  # pydantic reads it (load_config)

    severity: Level | None = doc(None, description="error, warning, info, or off; default: the rule's own")
    include: list[str] = doc(default_factory=list,
                             description="globs of the files the rule runs on (default: every file)")
    exclude: list[str] = doc(default_factory=list,
                             description="globs of the files the rule does not run on (its findings there are "
                                         "reported as suppressed)")


@dataclass(kw_only=True)
class LintConfig:
    """`.vllm-configurator.yaml`."""

    __pydantic_config__: ClassVar[dict] = {"extra": "forbid", "populate_by_name": True}

    rules: dict[str, Level | RuleConfig] = doc(
        default_factory=dict, description="per rule: a severity or off, or {severity, include, exclude}")
    ignore_paths: list[str] = doc(default_factory=list, alias="ignorePaths",
                                  description="globs of files never read (gitignore style, relative to this file)")
    gpu: str | dict[str, str] | None = doc(
        None, description="GPU assumed when a manifest does not say: a catalog name, or a map from a node-pool "
                          "name, a node-label value (or `key=value`), or a GPU resource name (nvidia.com/mig-3g.40gb) "
                          "to a GPU, with an optional `default` entry")
    models: dict[str, str] = doc(
        default_factory=dict, description="a served name or local path in a manifest -> the model id to evaluate "
                                          "(e.g. /models/llama: meta-llama/Llama-3.1-8B-Instruct)")
    workload: str | None = doc(None, description="workload whose target concurrency to check")
    vllm_version: str | None = doc(None, description="release assumed when the image tag does not say")
    model_config_dirs: list[str] = doc(default_factory=list, description="folders of local config.json files")
    strict: bool = doc(False, description="warnings fail the run too")

    def problem(self) -> str | None:
        """What a validated file still gets wrong that its types cannot say (`where: why`), or None."""
        from configurator.lint.rules import REGISTRY

        unknown = sorted(set(self.rules) - set(REGISTRY))
        if unknown:
            return f"rules: unknown rule id(s) {', '.join(unknown)} (see docs/rules.md)"
        if isinstance(self.gpu, str) and not self.gpu.strip():
            return "gpu: empty name"
        return None

    def severities(self) -> dict[str, str]:
        """Rule id -> severity (or off), for the rules this file changes."""
        out = {}
        for rid, r in self.rules.items():
            level = r if isinstance(r, str) else r.severity
            if level is not None:
                out[rid] = level
        return out


class Settings:
    """A loaded config and the folder its globs are relative to; answers the engine's questions."""

    def __init__(self, config: LintConfig | None = None, base: Path | None = None, source: str | None = None):
        self.config = config or LintConfig()
        self.base = (base or Path.cwd()).resolve()
        self.source = source  # the file it came from, for messages

    # -- paths ------------------------------------------------------------------------------------
    def _relative(self, file: str) -> str | None:
        if file.startswith("<"):  # <stdin>, an AdmissionReview object
            return None
        rel = self._relatives.get(file)
        if rel is None:  # resolve() is a system call per path part: once per file, not once per finding
            try:
                rel = Path(file).resolve().relative_to(self.base).as_posix()
            except ValueError:
                rel = Path(file).as_posix()
            self._relatives[file] = rel
        return rel

    @cached_property
    def _relatives(self) -> dict[str, str]:
        return {}

    @staticmethod
    def _spec(globs: list[str]):
        import pathspec

        return pathspec.GitIgnoreSpec.from_lines(globs)

    @cached_property
    def _ignored(self):
        return self._spec(self.config.ignore_paths) if self.config.ignore_paths else None

    @cached_property
    def _rule_specs(self) -> dict[str, tuple[Any, Any]]:
        out = {}
        for rid, r in self.config.rules.items():
            if isinstance(r, RuleConfig) and (r.include or r.exclude):
                out[rid] = (self._spec(r.include) if r.include else None, self._spec(r.exclude) if r.exclude else None)
        return out

    def ignored(self, file: str, folder: bool = False) -> bool:
        """Whether `ignorePaths` leaves this file (or, with `folder`, this folder: `tests/fixtures/` matches
        the folder tests/fixtures itself) out."""
        if self._ignored is None:
            return False
        rel = self._relative(file)
        return rel is not None and self._ignored.match_file(rel + "/" if folder and rel != "." else rel)

    def rule_excluded(self, rule: str, file: str) -> str | None:
        """Why `rule` does not run on `file` (its include / exclude globs), or None when it does."""
        specs = self._rule_specs.get(rule)
        rel = self._relative(file) if specs is not None else None
        if rel is None:
            return None
        include, exclude = specs
        where = self.source or "the config file"
        if include is not None and not include.match_file(rel):
            return f"{where}: rules.{rule}.include does not match {rel}"
        if exclude is not None and exclude.match_file(rel):
            return f"{where}: rules.{rule}.exclude matches {rel}"
        return None

    # -- GPU and model defaults ---------------------------------------------------------------------
    def gpu_for(self, resource: str | None, labels: dict[str, list[str]]) -> tuple[str, str] | None:
        """The GPU a `gpu:` map gives a server: (name, why), from an entry keyed by the GPU resource name, a
        node-label `key=value` or a label value (a node-pool name). The `default` entry (or a plain
        `gpu: NAME`) is `default_gpu()`, which comes after --gpu."""
        gpu = self.config.gpu
        if not isinstance(gpu, dict):
            return None
        where = self.source or "config"
        if resource and resource in gpu:
            return gpu[resource], f"{where} gpu[{resource}]"
        for key, values in labels.items():
            for value in values:
                for k in (f"{key}={value}", value):
                    if k in gpu:
                        return gpu[k], f"{where} gpu[{k}] (node label {key}={value})"
        return None

    def default_gpu(self) -> str | None:
        gpu = self.config.gpu
        return gpu if isinstance(gpu, str) else (gpu or {}).get("default")

    def model_for(self, name: str) -> str:
        """The model id a served name or local path stands for (`models:`), or the name itself."""
        return self.config.models.get(name, name)


def find_config(targets: list[str], start: Path | None = None) -> Path | None:
    """The nearest config file from the first file or folder target upwards (the current folder for `-`)."""
    first = next((t for t in targets if t != "-"), None)
    folder = Path(first) if first is not None else (start or Path.cwd())
    try:
        folder = folder.resolve()
    except RuntimeError:  # pathlib's "Symlink loop" (Python 3.11-3.12)
        raise InputError(f"{first}: a symbolic link loop: not read") from None
    except OSError as e:  # ELOOP (3.13+), a name too long
        raise InputError(f"{first}: cannot be read ({e.strerror or e})") from None
    if not folder.is_dir():
        folder = folder.parent
    for d in (folder, *folder.parents):
        for name in CONFIG_NAMES:
            p = d / name
            if p.is_file():
                return p
    return None


def load_config(path: Path | str) -> Settings:
    """Read and validate a config file; one InputError line on any problem."""
    import yaml

    from configurator.safe_io import decode_text, read_file

    p = Path(path)
    text = decode_text(read_file(p, cap=MAX_CONFIG_BYTES), str(p))
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise InputError(f"{p}: config file is not valid YAML{where}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(f"{p}: config file must be a mapping of settings")
    from pydantic import TypeAdapter, ValidationError

    try:
        cfg = TypeAdapter(LintConfig).validate_python(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        # a dataclass says "Unexpected keyword argument" where a model said this
        msg = "Extra inputs are not permitted" if first["type"] == "unexpected_keyword_argument" else first["msg"]
        raise InputError(f"{p}: {loc}: {msg}") from None
    why = cfg.problem()
    if why is not None:
        raise InputError(f"{p}: {why}")
    return Settings(cfg, p.parent, str(p))


def settings_for(targets: list[str], explicit: str | None) -> Settings:
    """The settings a `check` run uses: --config, else the nearest file, else the defaults."""
    if explicit:
        if not Path(explicit).exists():
            raise InputError(f"{explicit}: no such config file")
        return load_config(explicit)
    found = find_config(targets)
    return load_config(found) if found is not None else Settings()
