"""`webhook`, `review` and `audit`: the verdicts of `check`, applied in a live cluster."""

from __future__ import annotations

import json
import sys

import click

from configurator.errors import ExitCode, InputError


def _options(config_path: str | None, gpu: str | None):
    from configurator.cli.check import options_from_config

    return options_from_config(config_path, gpu)


@click.command("webhook")
@click.option("--host", default="0.0.0.0", show_default=True)
@click.option("--port", type=int, default=8443, show_default=True)
@click.option("--tls-cert-file", "cert", type=click.Path(dir_okay=False), default=None,
              help="Certificate (PEM); re-read when it changes on disk.")
@click.option("--tls-private-key-file", "key", type=click.Path(dir_okay=False), default=None)
@click.option("--config", "config_path", default=None, help="The same config file as `check`.")
@click.option("--gpu", default=None, help="GPU assumed when a workload does not say.")
@click.option("--on-error", type=click.Choice(["deny", "warn"]), default="deny", show_default=True,
              help="What an error finding does: deny the object, or allow it with warnings.")
@click.option("--on-failure", type=click.Choice(["allow", "deny"]), default="allow", show_default=True,
              help="What a timeout or an internal failure does.")
@click.option("--budget", type=float, default=2.0, show_default=True, help="Seconds per review.")
@click.option("--max-body-bytes", type=int, default=3 << 20, show_default=True)
@click.option("--body-timeout", type=float, default=5.0, show_default=True,
              help="Seconds a client may take to send its request body.")
@click.option("--cert-reload-interval", type=float, default=2.0, show_default=True,
              help="Seconds between checks of the certificate files for rotation.")
def webhook_cmd(host, port, cert, key, config_path, gpu, on_error, on_failure, budget, max_body_bytes,
                body_timeout, cert_reload_interval) -> None:
    """Serve the validating admission webhook over HTTPS: POST /validate, GET /healthz /readyz /metrics."""
    try:
        import prometheus_client  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise InputError("the webhook needs uvicorn and prometheus_client: pip install 'vllm-configurator[webhook]'") \
            from None
    from configurator.admission.server import WebhookSettings, serve

    if bool(cert) != bool(key):
        raise InputError("--tls-cert-file and --tls-private-key-file go together")
    opts, _ = _options(config_path, gpu)
    serve(WebhookSettings(options=opts, on_error=on_error, on_failure=on_failure, budget_s=budget,
                          max_body_bytes=max_body_bytes, body_timeout_s=body_timeout),
          host=host, port=port, cert=cert, key=key, reload_every_s=cert_reload_interval)


@click.command("review")
@click.option("--config", "config_path", default=None)
@click.option("--gpu", default=None)
@click.option("--on-error", type=click.Choice(["deny", "warn"]), default="deny", show_default=True)
def review_cmd(config_path, gpu, on_error) -> None:
    """Read an AdmissionReview (or a manifest) on stdin and print the webhook's AdmissionReview response.

    Exit 0 when allowed, 1 when denied, 2 for bad input.
    """
    import yaml

    from configurator.admission.review import ReviewError, response, review, verdict_for

    if sys.stdin.isatty():
        raise InputError("pipe an AdmissionReview or a manifest into standard input")
    opts, _ = _options(config_path, gpu)
    try:
        body = yaml.safe_load(sys.stdin.read())
    except yaml.YAMLError:
        raise InputError("standard input is not JSON or YAML") from None
    if isinstance(body, dict) and body.get("kind") == "AdmissionReview":
        try:
            out = review(body, opts, on_error)
        except ReviewError as e:
            raise InputError(str(e)) from None
    elif isinstance(body, dict):
        out = response("manifest", verdict_for(body, opts, on_error))
    else:
        raise InputError("standard input holds neither an AdmissionReview nor a Kubernetes object")
    click.echo(json.dumps(out, indent=2))
    sys.exit(int(ExitCode.OK if out["response"]["allowed"] else ExitCode.FAIL))


@click.command("audit")
@click.option("--context", default=None, help="kubeconfig context (default: the current one).")
@click.option("--namespace", "-n", default=None, help="One namespace (default: all).")
@click.option("--in-cluster", is_flag=True, help="Use the pod's service account.")
@click.option("--config", "config_path", default=None)
@click.option("--gpu", default=None, help="GPU assumed when neither the workload nor its nodes say.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif", "github"]), default="text",
              show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None)
@click.option("--strict", is_flag=True)
def audit_cmd(context, namespace, in_cluster, config_path, gpu, fmt, output, strict) -> None:
    """Check the workloads of a live cluster, the GPU type read from their nodes' labels.

    Same formats and exit codes as `check`.
    """
    from configurator.admission.audit import audit
    from configurator.cli.check import finish

    opts, cfg = _options(config_path, gpu)
    finish(audit(opts, context=context, namespace=namespace, in_cluster=in_cluster), fmt, output,
           strict or cfg.strict)
