"""charts/vllm-configurator-webhook: helm lint, and rendered objects valid against Kubernetes' schemas."""

import pytest
import yaml

from tests.emit_support import ROOT, helm, validate_object

CHART = ROOT / "charts" / "vllm-configurator-webhook"


def _render(*args: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(helm("template", "adm", str(CHART), "-n", "vllm-system", *args).stdout) if d]


def test_lint():
    helm("lint", "--strict", str(CHART))


@pytest.mark.parametrize("args", [(), ("--set", "tls.certManager.enabled=true"),
                                  ("--set", "onError=warn", "--set", "webhook.failurePolicy=Ignore"),
                                  ("--set", "onFailure=allow-with-warning", "--set", "autoscaling.enabled=true")])
def test_renders_valid_objects(args):
    objs = _render(*args)
    kinds = sorted(o["kind"] for o in objs)
    assert {"Deployment", "Service", "PodDisruptionBudget", "ValidatingWebhookConfiguration"} <= set(kinds)
    for o in objs:
        if o["apiVersion"].startswith("cert-manager.io/"):
            continue  # a CRD: its schema is cert-manager's, not Kubernetes'
        validate_object(o)
    hook = next(o for o in objs if o["kind"] == "ValidatingWebhookConfiguration")["webhooks"][0]
    assert hook["sideEffects"] == "None" and hook["admissionReviewVersions"] == ["v1"]
    assert hook["clientConfig"]["service"]["path"] == "/validate"
    excluded = hook["namespaceSelector"]["matchExpressions"][0]["values"]
    assert "vllm-system" in excluded and "kube-system" in excluded
    dep = next(o for o in objs if o["kind"] == "Deployment")
    cmd = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--max-connections=1000" in cmd and "--header-timeout=5" in cmd
    assert "--max-connections-per-client=256" in cmd and "--memory-budget=96" in cmd
    # the webhook answers overload and timeouts itself; the API server's policy decides only when no replica
    # is reachable, and then refuses by default (Ignore is a documented choice)
    assert hook["failurePolicy"] == ("Fail" if "webhook.failurePolicy=Ignore" not in args else "Ignore")
    probe = dep["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]
    assert probe["path"] == "/readyz"
    groups = {g for r in hook["rules"] for g in r["apiGroups"]}
    assert {"", "apps", "batch", "serving.kserve.io", "kaito.sh", "kubeai.org", "ray.io", "nvidia.com",
            "orchestration.aibrix.ai", "leaderworkerset.x-k8s.io"} <= groups  # every format `check` reads
    pdb = next(o for o in objs if o["kind"] == "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1 and dep["spec"].get("replicas", 2) >= 2
    hpa = [o for o in objs if o["kind"] == "HorizontalPodAutoscaler"]
    if "autoscaling.enabled=true" in args:
        assert "replicas" not in dep["spec"] and hpa[0]["spec"]["minReplicas"] == 2
        assert "--on-failure=allow-with-warning" in cmd
    else:
        assert not hpa and dep["spec"]["replicas"] == 2 and "--on-failure=deny" in cmd
    if "tls.certManager.enabled=true" in args:
        assert "caBundle" not in hook["clientConfig"]
        assert next(o for o in objs if o["kind"] == "ValidatingWebhookConfiguration")["metadata"]["annotations"][
            "cert-manager.io/inject-ca-from"] == "vllm-system/adm-vllm-configurator-webhook"
    else:
        assert hook["clientConfig"]["caBundle"]
        assert any(o["kind"] == "Secret" and o["type"] == "kubernetes.io/tls" for o in objs)


def test_wrong_values_are_refused():
    bad = helm("template", "adm", str(CHART), "--set", "onError=maybe", check=False)
    assert bad.returncode != 0 and "onError" in bad.stderr
    bad = helm("template", "adm", str(CHART), "--set", "limits.maxConnections=0", check=False)
    assert bad.returncode != 0 and "maxConnections" in bad.stderr
