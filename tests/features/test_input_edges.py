"""Reading user input at its edges: YAML that needs PyYAML's own constructor (merge keys, special tags,
complex keys), aliases that explode after such a fallback, folders, oversized and special files, and
safe_io's bounded readers and atomic writer."""

from __future__ import annotations

import io
import json
import os
import socket
import sys

import pytest

from configurator.errors import InputError
from configurator.lint.load import MAX_FILE_BYTES, load, parse_text
from configurator.safe_io import (
    InputTooLarge,
    NotRegularFile,
    decode_text,
    read_file,
    read_stdin,
    read_stream,
    special_kind,
    write_output,
)

# a Deployment whose selector comes through a YAML merge key (the common pattern): PyYAML constructs the
# document itself, and the positions are still known
MERGED = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: merged}
spec:
  selector:
    matchLabels: {<<: *labels}
  template:
    metadata:
      labels: &labels {app: vllm}
    spec:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-L4}
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.28.0
          resources: {limits: {nvidia.com/gpu: 1}}
          args:
            - vllm
            - serve
            - Qwen/Qwen3-8B
            - --max-model-len
            - "1000000"
"""


def test_a_merge_key_document_is_read_with_its_positions():
    docs, problems = parse_text(MERGED.replace("{<<: *labels}", "{app: vllm}").replace("&labels ", ""), "m.yaml")
    plain = docs[0]
    docs, problems = parse_text(MERGED.replace("matchLabels: {<<: *labels}\n  template:\n    metadata:\n"
                                               "      labels: &labels {app: vllm}",
                                               "matchLabels: &labels {app: vllm}\n  template:\n    metadata:\n"
                                               "      labels: {<<: *labels}"), "m.yaml")
    assert not problems and len(docs) == 1
    assert docs[0].data == plain.data and docs[0].data["spec"]["template"]["metadata"]["labels"] == {"app": "vllm"}
    args = ("spec", "template", "spec", "containers", 0, "args", 4)
    assert docs[0].positions[args] == plain.positions[args] == (21, 15)  # the same positions after the fallback


def test_check_finds_the_flag_of_a_merged_container_at_its_line(run_cli, tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text(MERGED.replace("matchLabels: {<<: *labels}\n  template:\n    metadata:\n"
                                "      labels: &labels {app: vllm}",
                                "matchLabels: &labels {app: vllm}\n  template:\n    metadata:\n"
                                "      labels: {<<: *labels}"))
    res = run_cli("check", "--format", "json", str(f))
    report = json.loads(res.stdout)
    assert report["servers"][0]["model"] == "Qwen/Qwen3-8B" and res.exit_code == 1
    finding = next(x for x in report["findings"] if x["rule"] == "max-model-len-over-limit")
    plain = tmp_path / "plain.yaml"
    plain.write_text(MERGED.replace("{<<: *labels}", "{app: vllm}").replace("&labels ", ""))
    same = next(x for x in json.loads(run_cli("check", "--format", "json", str(plain)).stdout)["findings"]
                if x["rule"] == "max-model-len-over-limit")
    assert (finding["line"], finding["column"]) == (same["line"], same["column"]) and finding["line"] in (20, 21)


def test_special_tags_and_a_block_script_in_a_fallback_document():
    text = ("kind: ConfigMap\nmetadata: {name: c}\nset: !!set {a, b}\npairs: !!omap [{a: 1}]\n"
            "script: |\n    vllm serve Qwen/Qwen3-8B\n    --max-model-len 4096\n")
    docs, problems = parse_text(text, "t.yaml")
    assert not problems and docs[0].data["set"] == {"a", "b"}
    assert docs[0].styles[("script",)] == "|" and docs[0].indents[("script",)] == 4


def test_kind_list_in_a_fallback_document_is_expanded():
    text = ("base: &b {apiVersion: v1, kind: ConfigMap}\nkind: List\nitems:\n"
            "  - {<<: *b, metadata: {name: one}}\n  - {<<: *b, metadata: {name: two}}\n")
    docs, problems = parse_text(text, "l.yaml")
    assert not problems and [d.data["metadata"]["name"] for d in docs] == ["one", "two"]


@pytest.mark.parametrize("text, says", [
    ("? [a, b]\n: c\n", "not valid YAML"),  # a complex key: PyYAML refuses it as unhashable
    ("when: !!timestamp 2020-13-45\n", "not valid YAML"),  # a constructor refusing the value
    ("a: b: c\n", "not valid YAML"),
])
def test_yaml_pyyaml_refuses_is_one_problem(text, says):
    docs, problems = parse_text(text, "bad.yaml")
    assert not docs and len(problems) == 1 and says in problems[0].message


def test_aliases_that_explode_after_a_fallback_are_refused():
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 8):
        levels.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    text = "m: &m {k: v}\nmerged: {<<: *m}\n" + "\n".join(levels) + "\n"
    docs, problems = parse_text(text, "bomb.yaml")
    assert not docs and "expand past" in problems[0].message


def test_a_folder_is_walked_hidden_folders_and_other_files_skipped(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / ".git").mkdir()
    (tmp_path / "a" / "one.yaml").write_text("kind: ConfigMap\nmetadata: {name: one}\n")
    (tmp_path / "a" / "b" / "two.yml").write_text("kind: ConfigMap\nmetadata: {name: two}\n")
    (tmp_path / "a" / "three.json").write_text('{"kind": "ConfigMap", "metadata": {"name": "three"}}')
    (tmp_path / ".git" / "hidden.yaml").write_text("kind: ConfigMap\nmetadata: {name: hidden}\n")
    (tmp_path / "a" / "notes.txt").write_text("kind: ConfigMap\n")
    (tmp_path / "a" / "bin.yaml").write_bytes(b"\x00\x01binary")
    (tmp_path / "a" / "latin.yaml").write_bytes(b"kind: ConfigMap\nname: caf\xe9\n")
    docs, problems = load([str(tmp_path)])
    assert sorted(d.data["metadata"]["name"] for d in docs) == ["one", "three", "two"]
    says = {os.path.basename(p.loc.file): p.message for p in problems}
    assert says == {"bin.yaml": "binary file, not a manifest", "latin.yaml": "not UTF-8 text"}


def test_oversized_and_special_files_are_reported_and_skipped(tmp_path):
    big = tmp_path / "big.yaml"
    with big.open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing is written
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    ok = tmp_path / "ok.yaml"
    ok.write_text("kind: ConfigMap\nmetadata: {name: ok}\n")
    docs, problems = load([str(tmp_path)])
    assert [d.data["metadata"]["name"] for d in docs] == ["ok"]
    says = {os.path.basename(p.loc.file): p.message for p in problems}
    assert "64 MiB limit" in says["big.yaml"] and "FIFO" in says["pipe.yaml"]
    with pytest.raises(FileNotFoundError):
        load([str(tmp_path / "missing.yaml")])


def test_stdin_bytes_that_are_not_text_are_a_problem():
    docs, problems = load(["-"], stdin=b"\xff\xfe\x00binary")
    assert not docs and problems[0].message == "binary file, not a manifest"
    docs, problems = load(["-"], stdin=b"kind: ConfigMap\nmetadata: {name: s}\n")
    assert docs[0].data["metadata"]["name"] == "s" and not problems


# ---- safe_io -------------------------------------------------------------------------------------------

def test_special_kinds(tmp_path):
    assert special_kind(tmp_path) is None
    assert special_kind(tmp_path.__class__("/dev/null")) == "character device"
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    assert special_kind(fifo) == "FIFO"
    sock_path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(sock_path))
        assert special_kind(sock_path) == "socket"
        with pytest.raises(NotRegularFile, match="a socket"):
            read_file(sock_path)


def test_read_file_refuses_what_is_not_a_readable_regular_file(tmp_path):
    with pytest.raises(InputError, match="is a folder"):
        read_file(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        read_file(tmp_path / "nope")
    with pytest.raises(NotRegularFile, match="character device"):
        read_file("/dev/zero")  # would never end
    f = tmp_path / "f"
    f.write_bytes(b"x" * 100)
    with pytest.raises(InputTooLarge, match="limit"):
        read_file(f, cap=10)
    assert read_file(f, cap=100) == b"x" * 100
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(InputError, match="cannot read"):
        read_file(tmp_path / "loop")


def test_read_stream_stops_at_the_cap():
    assert read_stream(io.BytesIO(b"abc"), cap=3) == b"abc"
    with pytest.raises(InputTooLarge):
        read_stream(io.BytesIO(b"abcd"), cap=3)


def test_read_stdin_text_stream_tty_and_none(monkeypatch):
    monkeypatch.setattr(sys, "stdin", None)
    assert read_stdin() == b""
    monkeypatch.setattr(sys, "stdin", io.StringIO("héllo"))
    assert read_stdin() == "héllo".encode()
    monkeypatch.setattr(sys, "stdin", io.StringIO("x" * 20))
    with pytest.raises(InputTooLarge):
        read_stdin(cap=10)

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", Tty(""))
    with pytest.raises(InputError, match="terminal"):
        read_stdin()


def test_decode_text():
    assert decode_text("\ufeffkind: x".encode(), "in") == "kind: x"
    with pytest.raises(InputError, match="binary"):
        decode_text(b"a\x00b", "in")
    with pytest.raises(InputError, match=r"not UTF-8 text \(line 2\)"):
        decode_text(b"ok\n\xff", "in")


def test_write_output_is_atomic_and_never_clobbers(tmp_path, monkeypatch):
    out = tmp_path / "o.txt"
    write_output(out, "one")
    assert out.read_text() == "one"
    with pytest.raises(InputError, match="--force"):
        write_output(out, "two")
    write_output(out, b"two", force=True)
    assert out.read_bytes() == b"two"
    with pytest.raises(InputError, match="inputs"):
        write_output(out, "three", force=True, inputs=("-", str(out)))
    link = tmp_path / "link"
    link.symlink_to(out)
    with pytest.raises(InputError, match="symbolic link"):
        write_output(link, "x", force=True)
    (tmp_path / "dir").mkdir()
    with pytest.raises(InputError, match="not a regular file"):
        write_output(tmp_path / "dir", "x", force=True)
    with pytest.raises(InputError, match="cannot write"):
        write_output(tmp_path / "no-such-folder" / "x", "x")
    # a file system without hard links: the exclusive create is used instead
    def no_link(*_a):
        raise OSError("hard links not supported")
    monkeypatch.setattr(os, "link", no_link)
    write_output(tmp_path / "copied.txt", "copied")
    assert (tmp_path / "copied.txt").read_text() == "copied"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temporary left behind
