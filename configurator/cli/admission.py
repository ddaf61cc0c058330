"""`webhook`, `review` and `audit`: the verdicts of `check`, applied in a live cluster."""

from __future__ import annotations

import json
import sys

import click

from configurator.errors import ExitCode, InputError


def _options(config_path: str | None, gpu: str | None):
    from configurator.cli.check import options_from_config

    return options_from_config(config_path, gpu)


_FAILURE_CHOICES = ["deny", "allow-with-warning", "allow"]


@click.command("webhook")
@click.option("--host", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8443, show_default=True, help="Port to listen on.")
@click.option("--tls-cert-file", "cert", type=click.Path(dir_okay=False), default=None,
              help="Certificate (PEM); re-read when it changes on disk.")
@click.option("--tls-private-key-file", "key", type=click.Path(dir_okay=False), default=None,
              help="Private key (PEM) of --tls-cert-file; re-read with it.")
@click.option("--insecure-http", is_flag=True,
              help="Serve plain HTTP without a certificate (local trials only: the API server calls webhooks over "
                   "HTTPS); logged as a warning at start.")
@click.option("--config", "config_path", default=None, help="The same config file as `check`.")
@click.option("--gpu", default=None, help="GPU assumed when a workload does not say.")
@click.option("--on-error", type=click.Choice(["deny", "warn"]), default="deny", show_default=True,
              help="What an error finding does: deny the object, or allow it with warnings.")
@click.option("--on-failure", type=click.Choice(_FAILURE_CHOICES), default="deny", show_default=True,
              help="What a review that cannot be completed (timeout, overload, malformed object, internal error) "
                   "does for an object that may hold a vLLM server: deny it, or allow it with a warning saying it was "
                   "not checked (`allow` is read as allow-with-warning). Other objects are always allowed.")
@click.option("--budget", type=click.FloatRange(0, 60, min_open=True), default=2.0, show_default=True,
              help="Seconds per review (more than 0; keep below the webhook's timeoutSeconds).")
@click.option("--max-body-bytes", type=click.IntRange(1024, 64 << 20), default=3 << 20, show_default=True,
              help="Largest request body read; a larger one is answered HTTP 413.")
@click.option("--body-timeout", type=click.FloatRange(0, 300, min_open=True), default=5.0, show_default=True,
              help="Seconds a client may take to send its request body.")
@click.option("--cert-reload-interval", type=click.FloatRange(1, 3600), default=2.0, show_default=True,
              help="Seconds between checks of the certificate files for rotation (at least 1).")
@click.option("--max-connections", type=click.IntRange(1, 100_000), default=1000, show_default=True,
              help="Connections held at once (handshakes under way included); more are closed at once.")
@click.option("--max-connections-per-client", type=click.IntRange(0, 100_000), default=256, show_default=True,
              help="Connections held at once from one client address (0: no limit); more are closed at once.")
@click.option("--header-timeout", type=click.FloatRange(0, 300, min_open=True), default=5.0, show_default=True,
              help="Seconds a client may take to finish the TLS handshake, and to send a request's headers.")
@click.option("--keep-alive", type=click.IntRange(1, 3600), default=30, show_default=True,
              help="Seconds an idle keep-alive connection is kept.")
@click.option("--queue", type=click.IntRange(1, 10_000), default=64, show_default=True,
              help="Reviews admitted at once (running or waiting); past it a review of an object that may hold a "
                   "vLLM server gets the --on-failure answer at once (a denial by default), others are allowed.")
@click.option("--memory-budget", type=click.IntRange(8, 1 << 16), default=96, show_default=True, metavar="MIB",
              help="MiB of request bodies held at once, all connections together; a body that does not fit is "
                   "read through without being kept and gets the --on-failure answer.")
def webhook_cmd(host, port, cert, key, insecure_http, config_path, gpu, on_error, on_failure, budget,
                max_body_bytes, body_timeout, cert_reload_interval, max_connections, max_connections_per_client,
                header_timeout, keep_alive, queue, memory_budget) -> None:
    """Serve the validating admission webhook over HTTPS: POST /validate, GET /healthz /readyz /metrics.

    It needs --tls-cert-file and --tls-private-key-file (exit 2 without them) unless --insecure-http is given.
    """
    try:
        import prometheus_client  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise InputError("the webhook needs uvicorn and prometheus_client: pip install 'vllm-configurator[webhook]'") \
            from None
    from configurator.admission.server import WebhookSettings, serve

    if bool(cert) != bool(key):
        raise InputError("--tls-cert-file and --tls-private-key-file go together")
    if not cert and not insecure_http:
        raise InputError("the webhook serves HTTPS: give --tls-cert-file and --tls-private-key-file, or "
                         "--insecure-http to serve plain HTTP for a local trial")
    if cert and insecure_http:
        raise InputError("--insecure-http and --tls-cert-file exclude each other")
    opts, _ = _options(config_path, gpu)
    serve(WebhookSettings(options=opts, on_error=on_error,
                          on_failure="deny" if on_failure == "deny" else "allow-with-warning", budget_s=budget,
                          max_body_bytes=max_body_bytes, body_timeout_s=body_timeout, max_connections=max_connections,
                          max_connections_per_client=max_connections_per_client,
                          handshake_timeout_s=header_timeout, header_timeout_s=header_timeout,
                          keep_alive_s=keep_alive, queue=queue, memory_budget_bytes=memory_budget << 20),
          host=host, port=port, cert=cert, key=key, reload_every_s=cert_reload_interval)


@click.command("review")
@click.option("--config", "config_path", default=None,
              help="The same config file as `check` (default: the nearest .vllm-configurator.yaml or .yml).")
@click.option("--gpu", default=None, help="GPU assumed when a workload does not say (name, alias or label value).")
@click.option("--on-error", type=click.Choice(["deny", "warn"]), default="deny", show_default=True,
              help="What an error finding does: deny the object, or allow it with warnings.")
@click.option("--on-failure", type=click.Choice(_FAILURE_CHOICES), default="deny", show_default=True,
              help="As for `webhook`: what an object that cannot be checked gets.")
def review_cmd(config_path, gpu, on_error, on_failure) -> None:
    """Read AdmissionReviews or manifests on stdin (JSON, or YAML with any number of documents, such as
    `plan --emit manifest` output) and print the webhook's AdmissionReview response for each object:
    one JSON object for a single object, a JSON list for several.

    Exit 0 when all are allowed, 1 when any is denied, 2 for bad input (nothing is printed then).
    """
    from configurator.admission.review import ReviewError, assess, parse_request, response
    from configurator.lint.load import parse_text
    from configurator.safe_io import decode_text, read_stdin

    text = decode_text(read_stdin(), "standard input")
    opts, _ = _options(config_path, gpu)
    on_failure = "deny" if on_failure == "deny" else "allow-with-warning"
    try:
        docs, problems = parse_text(text, "<stdin>")
    except RecursionError:  # the loader recurses over nesting and aliases: a boundary, so one line here
        raise InputError("standard input: nested too deeply, or an alias that contains itself") from None
    if problems:
        p = problems[0]
        raise InputError(f"standard input, line {p.loc.line}: {p.message}")
    if not docs:
        raise InputError("standard input holds neither an AdmissionReview nor a Kubernetes object")
    out = []
    for n, doc in enumerate(docs, 1):
        body = doc.data
        if isinstance(body, dict) and body.get("kind") == "AdmissionReview":
            try:
                req = parse_request(body)
            except ReviewError as e:
                raise InputError(f"document {n}: {e}") from None
            out.append(response(req.uid, assess(req.object, opts, on_error, on_failure)))
        elif isinstance(body, dict):
            out.append(response(f"manifest-{n}" if len(docs) > 1 else "manifest",
                                assess(body, opts, on_error, on_failure)))
        else:
            raise InputError(f"document {n}: not a Kubernetes object or an AdmissionReview")
    click.echo(json.dumps(out[0] if len(out) == 1 else out, indent=2))
    sys.exit(int(ExitCode.OK if all(o["response"]["allowed"] for o in out) else ExitCode.FAIL))


@click.command("audit")
@click.option("--context", default=None, help="kubeconfig context (default: the current one).")
@click.option("--namespace", "-n", default=None, help="One namespace (default: all).")
@click.option("--in-cluster", is_flag=True, help="Use the pod's service account.")
@click.option("--config", "config_path", default=None,
              help="The same config file as `check` (default: the nearest .vllm-configurator.yaml or .yml).")
@click.option("--gpu", default=None, help="GPU assumed when neither the workload nor its nodes say.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif", "github", "junit", "html"]),
              default="text", show_default=True,
              help="Report format, as for `check`: text, json, sarif, github, junit or html.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the report to FILE instead of standard output (never over an existing file).")
@click.option("--strict", is_flag=True, help="Warnings fail the run too.")
@click.option("--deadline", "deadline", type=click.FloatRange(1, 86_400), default=300, show_default=True,
              help="Seconds the whole audit may take (listing and evaluation); past it, exit 2 with no report.")
def audit_cmd(context, namespace, in_cluster, config_path, gpu, fmt, output, strict, deadline) -> None:
    """Check the workloads of a live cluster, the GPU type read from their nodes' labels.

    The formats of `check` (text, json, sarif, github, junit, html) and its exit codes.
    """
    from configurator.admission.audit import audit
    from configurator.cli.check import finish

    opts, cfg = _options(config_path, gpu)
    finish(audit(opts, context=context, namespace=namespace, in_cluster=in_cluster, deadline_s=deadline), fmt,
           output, strict or cfg.strict)
