"""Every vLLM server in a set of documents: each document to the first format plugin that recognises it, else
to the generic discovery pass (configurator/lint/formats dispatch). Above lint/extract.py (the Server model and
the command-line reading) and the plugins, so that neither imports back up."""

from __future__ import annotations

from configurator.lint.extract import _ASSUMED_RELEASE, Server
from configurator.lint.inputs import NotUnderstood
from configurator.lint.load import Document


def extract_all(docs: list[Document], assumed_release: str | None = None) -> tuple[list[Server], list[NotUnderstood]]:
    """Every vLLM server in the documents, in input order, and every object that mentions vLLM but
    yields none (or holds a value of the wrong shape), with the reason. `assumed_release` (--vllm-version)
    reads the commands of servers whose image names no release."""
    from configurator.lint.formats import dispatch

    token = _ASSUMED_RELEASE.set(assumed_release)
    try:
        return dispatch(docs)
    finally:
        _ASSUMED_RELEASE.reset(token)


def extract(docs: list[Document]) -> list[Server]:
    """Every vLLM server in the documents, in input order."""
    return extract_all(docs)[0]
