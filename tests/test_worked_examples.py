"""The classic sizing examples hold: per token, per sequence, per batch; GQA, fp8, hybrids."""

from configurator.units import GiB


def test_llama2_7b_fp16(estimate_json):
    code, r = estimate_json("--model", "meta-llama/Llama-2-7b-hf", "--gpu", "a100-80gb",
                            "--max-model-len", "4096", "--max-num-seqs", "8")
    assert code == 0 and r["fits"]
    per_token = r["kv_cache"]["bytes_per_token"]
    assert per_token == 524_288  # 2 x 32 x (32 x 128) x 2 B
    assert per_token * 4096 == 2 * GiB  # per sequence
    assert per_token * 4096 * 8 == 16 * GiB  # batch of 8
    assert any("524,288 B" in line and "16 GiB" not in line for line in r["derivation"])
    assert any("= 2 GiB per sequence at full length" in line for line in r["derivation"])
    # the batch total is what all 8 would need at full length, not a reservation next to FITS
    assert any("all 8 at full length would need 16 GiB" in line for line in r["derivation"])


def test_llama3_8b_gqa_is_a_quarter(estimate_json):
    _, r = estimate_json("--model", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "h100", "--max-model-len", "4096")
    assert r["kv_cache"]["bytes_per_token"] == 131_072  # 8 KV heads instead of 32


def test_fp8_halves(estimate_json):
    for model, full in (("meta-llama/Llama-2-7b-hf", 524_288), ("meta-llama/Meta-Llama-3.1-8B", 131_072)):
        _, r = estimate_json("--model", model, "--gpu", "h100", "--kv-cache-dtype", "fp8", "--max-model-len", "4096")
        assert r["kv_cache"]["bytes_per_token"] == full // 2
        assert r["kv_cache"]["dtype"] == "fp8"


def test_qwen36_27b_hybrid_counts_only_full_attention_layers(estimate_json):
    for model in ("Qwen/Qwen3.6-27B-FP8", "Qwen/Qwen3.5-27B"):
        _, r = estimate_json("--model", model, "--gpu", "h100-nvl", "--kv-cache-dtype", "fp8",
                             "--gpu-memory-utilization", "0.75", "--max-num-seqs", "8",
                             "--max-model-len", "131072")
        kv = r["kv_cache"]
        assert kv["bytes_per_token"] == 32_768, model  # 16 full-attention layers, not 64
        assert kv["state_bytes_per_sequence"] > 48 * 1_000_000  # 48 Gated DeltaNet states
        assert r["model"]["layers_with_kv"] == {"mamba": 48, "full": 16}
        assert any("131,072 B per token" in line and "overstates" in line for line in r["derivation"])


def test_text_output_explains_the_hybrid(run_cli):
    res = run_cli("estimate", "--model", "Qwen/Qwen3.6-27B-FP8", "--gpu", "h100-nvl", "--kv-cache-dtype", "fp8",
                  "--max-model-len", "131072", "--max-num-seqs", "8", "--gpu-memory-utilization", "0.75")
    assert res.exit_code == 0
    assert "32,768 B" in res.stdout and "overstates it 4.0x" in res.stdout
    assert "Available KV cache memory:" in res.stdout and "GPU KV cache size:" in res.stdout


def test_mla_latent_not_split_by_tp(estimate_json):
    _, one = estimate_json("--model", "deepseek-ai/DeepSeek-V3", "--gpu", "h200", "-tp", "8",
                           "--max-model-len", "8192", "--kv-cache-memory-bytes", "20G")
    assert one["kv_cache"]["bytes_per_token"] == 61 * 576 * 2  # 70,272 B on every rank


def test_sliding_window_layers_bounded(estimate_json):
    _, r = estimate_json("--model", "openai/gpt-oss-120b", "--gpu", "h100", "--max-model-len", "131072",
                         "--kv-cache-memory-bytes", "10G")
    kv = r["kv_cache"]
    assert kv["bytes_per_token"] == 18 * 2 * 8 * 64 * 2  # only the 18 full layers grow
    assert kv["window_bytes_per_sequence"] == 18 * 2 * 8 * 64 * 2 * 128
    assert len(kv["groups"]) == 2
