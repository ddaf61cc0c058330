{{/* GENERATED from configurator/vllm/flags.py by scripts/gen_chart_schema.py; do not edit.
     One row per vLLM setting, in the order the chart renders them: the value's section and key,
     its flag, type, whether false renders --no-<flag>, and every spelling (for extraArgs). */}}
{{- define "vllm.flagTable" -}}
- {"section": "vllm", "key": "gpuMemoryUtilization", "flag": "--gpu-memory-utilization", "type": "float", "negatable": false, "spellings": ["--gpu-memory-utilization"]}
- {"section": "vllm", "key": "kvCacheDtype", "flag": "--kv-cache-dtype", "type": "str", "negatable": false, "spellings": ["--kv-cache-dtype"]}
- {"section": "vllm", "key": "maxNumSeqs", "flag": "--max-num-seqs", "type": "int", "negatable": false, "spellings": ["--max-num-seqs"]}
- {"section": "vllm", "key": "maxModelLen", "flag": "--max-model-len", "type": "len", "negatable": false, "spellings": ["--max-model-len"]}
- {"section": "vllm", "key": "tensorParallelSize", "flag": "--tensor-parallel-size", "type": "int", "negatable": false, "spellings": ["--tensor-parallel-size", "-tp"]}
- {"section": "vllm", "key": "pipelineParallelSize", "flag": "--pipeline-parallel-size", "type": "int", "negatable": false, "spellings": ["--pipeline-parallel-size", "-pp"]}
- {"section": "vllm", "key": "dataParallelSize", "flag": "--data-parallel-size", "type": "int", "negatable": false, "spellings": ["--data-parallel-size", "-dp"]}
- {"section": "vllm", "key": "maxNumBatchedTokens", "flag": "--max-num-batched-tokens", "type": "int", "negatable": false, "spellings": ["--max-num-batched-tokens"]}
- {"section": "vllm", "key": "quantization", "flag": "--quantization", "type": "str", "negatable": false, "spellings": ["--quantization", "-q"]}
- {"section": "vllm", "key": "blockSize", "flag": "--block-size", "type": "int", "negatable": false, "spellings": ["--block-size"]}
- {"section": "vllm", "key": "enforceEager", "flag": "--enforce-eager", "type": "bool", "negatable": false, "spellings": ["--enforce-eager"]}
- {"section": "vllm", "key": "enablePrefixCaching", "flag": "--enable-prefix-caching", "type": "bool", "negatable": true, "spellings": ["--enable-prefix-caching"]}
- {"section": "vllm", "key": "enableExpertParallel", "flag": "--enable-expert-parallel", "type": "bool", "negatable": false, "spellings": ["--enable-expert-parallel"]}
- {"section": "vllm", "key": "dtype", "flag": "--dtype", "type": "str", "negatable": false, "spellings": ["--dtype"]}
- {"section": "vllm", "key": "kvCacheMemoryBytes", "flag": "--kv-cache-memory-bytes", "type": "bytes", "negatable": false, "spellings": ["--kv-cache-memory", "--kv-cache-memory-bytes"]}
- {"section": "vllm", "key": "enableChunkedPrefill", "flag": "--enable-chunked-prefill", "type": "bool", "negatable": true, "spellings": ["--enable-chunked-prefill"]}
- {"section": "vllm", "key": "numGpuBlocksOverride", "flag": "--num-gpu-blocks-override", "type": "int", "negatable": false, "spellings": ["--num-gpu-blocks-override"]}
- {"section": "vllm", "key": "cpuOffloadGb", "flag": "--cpu-offload-gb", "type": "float", "negatable": false, "spellings": ["--cpu-offload-gb"]}
- {"section": "vllm", "key": "mambaCacheDtype", "flag": "--mamba-cache-dtype", "type": "str", "negatable": false, "spellings": ["--mamba-cache-dtype"]}
- {"section": "vllm", "key": "mambaSsmCacheDtype", "flag": "--mamba-ssm-cache-dtype", "type": "str", "negatable": false, "spellings": ["--mamba-ssm-cache-dtype"]}
- {"section": "vllm", "key": "disableHybridKvCacheManager", "flag": "--disable-hybrid-kv-cache-manager", "type": "bool", "negatable": false, "spellings": ["--disable-hybrid-kv-cache-manager"]}
- {"section": "vllm", "key": "prefillContextParallelSize", "flag": "--prefill-context-parallel-size", "type": "int", "negatable": false, "spellings": ["--prefill-context-parallel-size"]}
- {"section": "vllm", "key": "enableEplb", "flag": "--enable-eplb", "type": "bool", "negatable": false, "spellings": ["--enable-eplb"]}
- {"section": "vllm", "key": "eplbConfig", "flag": "--eplb-config", "type": "str", "negatable": false, "spellings": ["--eplb-config"]}
- {"section": "vllm", "key": "maxCudagraphCaptureSize", "flag": "--max-cudagraph-capture-size", "type": "int", "negatable": false, "spellings": ["--max-cudagraph-capture-size"]}
- {"section": "vllm", "key": "enableLora", "flag": "--enable-lora", "type": "bool", "negatable": false, "spellings": ["--enable-lora"]}
- {"section": "vllm", "key": "maxLoras", "flag": "--max-loras", "type": "int", "negatable": false, "spellings": ["--max-loras"]}
- {"section": "vllm", "key": "maxLoraRank", "flag": "--max-lora-rank", "type": "int", "negatable": false, "spellings": ["--max-lora-rank"]}
- {"section": "vllm", "key": "maxCpuLoras", "flag": "--max-cpu-loras", "type": "int", "negatable": false, "spellings": ["--max-cpu-loras"]}
- {"section": "vllm", "key": "loraDtype", "flag": "--lora-dtype", "type": "str", "negatable": false, "spellings": ["--lora-dtype"]}
- {"section": "vllm", "key": "fullyShardedLoras", "flag": "--fully-sharded-loras", "type": "bool", "negatable": false, "spellings": ["--fully-sharded-loras"]}
- {"section": "vllm", "key": "speculativeConfig", "flag": "--speculative-config", "type": "str", "negatable": false, "spellings": ["--speculative-config"]}
- {"section": "vllm", "key": "limitMmPerPrompt", "flag": "--limit-mm-per-prompt", "type": "str", "negatable": false, "spellings": ["--limit-mm-per-prompt"]}
- {"section": "vllm", "key": "skipMmProfiling", "flag": "--skip-mm-profiling", "type": "bool", "negatable": false, "spellings": ["--skip-mm-profiling"]}
- {"section": "vllm", "key": "languageModelOnly", "flag": "--language-model-only", "type": "bool", "negatable": false, "spellings": ["--language-model-only"]}
- {"section": "model", "key": "servedModelName", "flag": "--served-model-name", "type": "str", "negatable": false, "spellings": ["--served-model-name"]}
- {"section": "model", "key": "trustRemoteCode", "flag": "--trust-remote-code", "type": "bool", "negatable": false, "spellings": ["--trust-remote-code"]}
- {"section": "model", "key": "revision", "flag": "--revision", "type": "str", "negatable": false, "spellings": ["--revision"]}
{{- end -}}
{{- define "vllm.reservedFlags" -}}
{"--port": "port", "--model": "model.name"}
{{- end -}}
{{- /* progressDeadlineSeconds when null: the start-up budget plus this (configurator/startup.py) */}}
{{- define "vllm.rolloutMarginSeconds" -}}
600
{{- end -}}
