"""Throughput of an mpnet-base-shaped encoder (random weights: speed only, no quality) on a GPU: inference at 256
and 128 tokens (what embedding an index costs) and a LoRA contrastive training step (what issue 42's item 3, the
transformer's own weights trained on the mined pairs, would cost). Needs torch, transformers and peft (a device
image's; knowledge never imports this), writes $OUT/probe.json:

    python3 bench/gpu_probe.py
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import torch
from peft import LoraConfig, get_peft_model
from transformers import MPNetConfig, MPNetModel

CONFIG = MPNetConfig()  # base: 12 layers, 768 wide, 110M parameters, as all-mpnet-base-v2


def timed(run, steps: int) -> float:
    for _ in range(3):
        run()
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(steps):
        run()
    torch.cuda.synchronize()
    return time.perf_counter() - started


def inference(dtype: torch.dtype, batch: int = 256, seq: int = 256, steps: int = 20) -> float:
    model = MPNetModel(CONFIG).cuda().to(dtype).eval()
    ids = torch.randint(5, 30000, (batch, seq), device="cuda")
    mask = torch.ones_like(ids)

    def run() -> None:
        with torch.no_grad():
            model(input_ids=ids, attention_mask=mask)

    return batch * steps / timed(run, steps)


def lora_training(batch: int, question: int, code: int, steps: int = 15) -> float:
    model = get_peft_model(
        MPNetModel(CONFIG).cuda(), LoraConfig(r=16, lora_alpha=32, target_modules=["q", "k", "v", "o"])
    )
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)

    def pooled(ids: torch.Tensor) -> torch.Tensor:
        mask = torch.ones_like(ids)
        hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
        return torch.nn.functional.normalize((hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True), dim=-1)

    def run() -> None:
        questions = torch.randint(5, 30000, (batch, question), device="cuda")
        codes = torch.randint(5, 30000, (batch, code), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            scores = pooled(questions) @ pooled(codes).T * 20
            loss = torch.nn.functional.cross_entropy(scores, torch.arange(batch, device="cuda"))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return batch * steps / timed(run, steps)


def main() -> None:
    torch.manual_seed(0)
    out: dict[str, object] = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    out["infer_seq256_fp16_per_s"] = round(inference(torch.float16))
    out["infer_seq256_bf16_per_s"] = round(inference(torch.bfloat16))
    out["infer_seq128_bf16_per_s"] = round(inference(torch.bfloat16, seq=128))
    for batch in (128, 256):
        out[f"lora_train_pairs_per_s_b{batch}_q64_c256"] = round(lora_training(batch, 64, 256))
    out["peak_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 1)
    print(json.dumps(out, indent=1))
    (Path(os.environ.get("OUT", ".")) / "probe.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
