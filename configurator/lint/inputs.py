"""The types the format plugins share with the registry (configurator/lint/formats) and the facade
(configurator/lint/extract.py): what an extractor may look up (`Inputs`), what it could not read
(`NotUnderstood`), and one object's identity. Below both, so neither imports the other for them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from configurator.lint.load import Document, Loc
from configurator.lint.shape import Node


@dataclass(frozen=True)
class NotUnderstood:
    """An object (or file) that mentions vLLM but yields no server we could read, or a value in it of
    the wrong shape, and why."""

    loc: Loc
    kind: str
    name: str
    reason: str
    rule: str = "not-understood"  # the rule it is reported under (runtime-template-unbound: a template)


@dataclass
class Inputs:
    """What an extractor may look up beyond its own object: the other documents of the run (a
    ConfigMap named by `--config`, the ServingRuntime an InferenceService uses), which of them a
    server consumed, and findings an extractor makes about an object instead of a server."""

    docs: list[Document]
    consumed: set[int] = field(default_factory=set)  # id() of documents a server read
    notices: dict[int, list[NotUnderstood]] = field(default_factory=dict)  # id(document) -> its findings
    memo: dict[str, Any] = field(default_factory=dict)  # what a format computes once per run (its own key)
    all_named: dict[tuple[str, str], list[Node]] = field(default_factory=dict)  # (kind, name) -> objects, in order

    def named(self, kind: str, name: str, file: str | None = None, namespace: str | None = None) -> Node | None:
        """The object of this kind and name that a pod in `namespace` (of `file`) would get: never one in another
        namespace (an object that states none could be applied to any), then the one in the same file first (a
        folder of unrelated manifests often holds several ConfigMaps called vllm-config, and a pod reads the one
        it ships with), then one that states the same namespace."""
        best, best_key = None, None
        for node in self.all_named.get((kind, name), ()):
            ns = identity(node)[1]
            if namespace and ns and ns != namespace:
                continue
            key = (node.doc.file == file, bool(namespace) and ns == namespace)
            if best_key is None or key > best_key:
                best, best_key = node, key
        return best

    def config_document(self, name: str, key: str, file: str | None = None, namespace: str | None = None
                        ) -> tuple[Node, Loc] | None:
        """The YAML file a ConfigMap (`named` as a pod would get it) holds under data.`key`: its one document and
        where the value starts; the ConfigMap counts as read by a server. None when there is no such ConfigMap,
        value, or single parsed document."""
        from configurator.lint.load import parse_text

        cm = self.named("ConfigMap", name, file, namespace)
        text = cm.str("data", key, max_chars=1 << 20) if cm is not None else None
        if cm is None or text is None:
            return None
        self.consumed.add(id(cm.doc))
        base = cm.loc("data", key)
        docs, problems = parse_text(text, base.file)
        if problems or len(docs) != 1:
            return None
        return Node.of(docs[0]), base

    def notice(self, doc: Document, finding: NotUnderstood) -> None:
        """A finding on an object that yields no server (an unbound runtime template), reported with it."""
        self.notices.setdefault(id(doc), []).append(finding)

    @classmethod
    def of(cls, docs: list[Document]) -> Inputs:
        out = cls(docs)
        for d in docs:
            if isinstance(d.data, dict) and isinstance(d.data.get("kind"), str):
                meta = d.data.get("metadata")
                name = meta.get("name") if isinstance(meta, dict) else None
                if isinstance(name, str):
                    out.all_named.setdefault((d.data["kind"], name), []).append(Node.of(d))
        return out


# -- shared by the formats: one object's identity -------------------------------------------------

def identity(obj: Node) -> tuple[str, str | None, str]:
    """(kind, namespace, name) of a Kubernetes object, each read as a string."""
    meta = obj.mapping("metadata")
    kind = obj.str("kind", max_chars=253) or ""
    if meta is None:
        return kind, None, ""
    return kind, meta.name("namespace"), meta.name("name") or ""
