"""LoRA adapters on the shared encoder (``dynaforge.inference.lora``, offered to plugins by
``dynaforge.tasks.training``): fine-tuning is deterministic for a seed and heeds its time limit, the adapter file
round-trips byte for byte and refuses what is not one, and the merged encoder computes what peft computes while
sharing every tensor it does not change with the process's shared encoder.

The texts are written for these tests; the runs take a few steps on the real MiniLM encoder."""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from dynaforge.inference.encoders import minilm_path, shared_encoder  # noqa: E402
from dynaforge.inference.lora import adapted_encoder, merge_adapter  # noqa: E402
from dynaforge.tasks.training import (  # noqa: E402
    ADAPTER_FILE,
    AdapterError,
    FineTuneSettings,
    LoraSettings,
    encoder_for,
    fine_tune,
    read_adapter,
    save_adapter,
)

WARM = [f"a {w} {t}" for w in ("lovely", "cosy", "sunny") for t in ("kitchen", "garden", "morning", "visit")]
COLD = [f"a {w} {t}" for w in ("gloomy", "damp", "bleak") for t in ("kitchen", "garden", "morning", "visit")]
TEXTS = WARM + COLD
TARGETS = [1.0] * len(WARM) + [0.0] * len(COLD)
QUICK = FineTuneSettings(
    epochs=2,
    batch_size=8,
    learning_rate=5e-3,
    head_learning_rate=5e-2,
    min_warmup_steps=1,
    max_length=16,
)


@pytest.fixture(scope="module")
def tuned():
    return fine_tune(TEXTS, TARGETS, settings=QUICK, seed=0)


def _token_states(model, texts):
    encoder = shared_encoder(minilm_path())
    enc = encoder.tokenize(texts, max_length=16)
    with torch.inference_mode():
        return model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state


def test_importing_the_kit_imports_neither_torch_nor_peft():
    code = "import sys, dynaforge.tasks.training; print(sorted({'torch', 'peft'} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_fine_tuning_is_deterministic_for_a_seed_and_learns_the_labels(tuned):
    again = fine_tune(TEXTS, TARGETS, settings=QUICK, seed=0)
    other = fine_tune(TEXTS, TARGETS, settings=QUICK, seed=1)
    assert tuned.adapter.tensors.keys() == again.adapter.tensors.keys()
    assert all(torch.equal(tuned.adapter.tensors[k], again.adapter.tensors[k]) for k in tuned.adapter.tensors)
    assert torch.equal(tuned.head_weight, again.head_weight) and torch.equal(tuned.head_bias, again.head_bias)
    assert not all(torch.equal(tuned.adapter.tensors[k], other.adapter.tensors[k]) for k in tuned.adapter.tensors)
    # rank-8 updates of query and value in each of MiniLM-L6's six layers
    assert len(tuned.adapter.modules()) == 12 and tuned.adapter.parameters() == 12 * 8 * (384 + 384)
    assert tuned.steps == tuned.planned_steps == 6 and not tuned.stopped_early
    vectors = tuned.encoder().embed(TEXTS, max_length=16)
    logits = (vectors @ tuned.head_weight.T + tuned.head_bias).squeeze(1)
    assert ((logits > 0).float().tolist()) == TARGETS


def test_the_time_limit_stops_after_the_step_that_passes_it():
    cut = fine_tune(TEXTS, TARGETS, settings=FineTuneSettings(epochs=3, batch_size=8, time_limit_s=1e-9), seed=0)
    assert cut.steps == 1 and cut.planned_steps == 9 and cut.stopped_early
    assert cut.record()["stopped_by_time_limit"] is True


def test_fine_tune_refuses_mismatched_inputs():
    with pytest.raises(ValueError, match="as many targets as texts"):
        fine_tune(TEXTS, TARGETS[:-1])
    with pytest.raises(ValueError, match="one weight per text"):
        fine_tune(TEXTS, TARGETS, row_weights=[1.0])


# pairs: "same" when the second text repeats the first's weather word, whatever the noun; the last column of the fixed
# features is pure noise, the one before it the answer itself for a few rows (a head may read fixed features too)
FIRSTS = [f"a {w} {t}" for w in ("sunny", "rainy", "windy") for t in ("kitchen", "garden", "morning", "visit")]
SECONDS = [f"a {w} day" for w in ("sunny", "rainy", "windy") for _ in range(4)] + [
    f"a {w} day" for w in ("rainy", "windy", "sunny") for _ in range(4)
]
FIRSTS = FIRSTS + FIRSTS
SAME = [1] * 12 + [0] * 12


def test_fine_tuning_on_pairs_reads_the_pair_block_and_the_fixed_features():
    from dynaforge.inference.lora import pair_block

    extra = torch.tensor([[float(i % 2), float((i * 7) % 5)] for i in range(len(FIRSTS))])
    settings = FineTuneSettings(
        epochs=4, batch_size=8, learning_rate=5e-3, head_learning_rate=5e-2, min_warmup_steps=1, max_length=16
    )
    tuned = fine_tune(FIRSTS, SAME, second_texts=SECONDS, extra_features=extra, classes=2, settings=settings, seed=0)
    again = fine_tune(FIRSTS, SAME, second_texts=SECONDS, extra_features=extra, classes=2, settings=settings, seed=0)
    dim = shared_encoder(minilm_path()).dim
    assert tuple(tuned.head_weight.shape) == (2, 4 * dim + 1 + 2)
    assert torch.equal(tuned.head_weight, again.head_weight)
    assert all(torch.equal(tuned.adapter.tensors[k], again.adapter.tensors[k]) for k in tuned.adapter.tensors)
    # served as a pair classifier is served: both texts through the merged encoder, the block, the fixed features
    encoder = tuned.encoder()
    u, v = encoder.embed(FIRSTS, max_length=16), encoder.embed(SECONDS, max_length=16)
    logits = torch.cat([pair_block(u, v), extra], dim=1) @ tuned.head_weight.T + tuned.head_bias
    assert logits.argmax(dim=1).tolist() == SAME
    # the block: u, v, |u - v|, u * v and the cosine of the two unit vectors
    block = pair_block(u[:1], v[:1])
    assert block.shape[1] == 4 * dim + 1 and float(block[0, -1]) == pytest.approx(float((u[0] * v[0]).sum()))


def test_pairs_refuse_mismatched_inputs():
    with pytest.raises(ValueError, match="second texts"):
        fine_tune(FIRSTS, SAME, second_texts=SECONDS[:-1], classes=2)
    with pytest.raises(ValueError, match="extra_features go with second_texts"):
        fine_tune(FIRSTS, SAME, extra_features=torch.zeros((len(FIRSTS), 1)), classes=2)


def test_the_adapter_file_round_trips_byte_for_byte(tuned, tmp_path):
    first = save_adapter(tmp_path / "a", tuned.adapter)
    second = save_adapter(tmp_path / "b", tuned.adapter)
    assert first.name == ADAPTER_FILE and first.read_bytes() == second.read_bytes()
    assert first.stat().st_size < 400_000
    read = read_adapter(first)
    assert (read.rank, read.alpha, read.target_modules) == (8, 16.0, ("query", "value"))
    assert read.base_sha256 == tuned.adapter.base_sha256
    assert all(torch.equal(read.tensors[k], tuned.adapter.tensors[k]) for k in tuned.adapter.tensors)


def test_what_is_not_an_adapter_of_the_installed_encoder_is_refused(tuned, tmp_path):
    from safetensors.torch import save_file

    save_file({"x": torch.zeros(2)}, str(tmp_path / "head.safetensors"), metadata={"format": "something-else/1"})
    with pytest.raises(AdapterError, match="is not a dynaforge-lora/1 adapter"):
        read_adapter(tmp_path / "head.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(AdapterError, match="train the model again"):
        read_adapter(tmp_path / "junk.safetensors")
    from dataclasses import replace

    foreign = replace(tuned.adapter, base_sha256="0" * 64)
    with pytest.raises(AdapterError, match="trained on another version of the encoder.*retrain"):
        merge_adapter(shared_encoder(minilm_path()), foreign)
    misplaced = replace(
        tuned.adapter,
        tensors={
            k.replace("attention.self.query", "attention.self.nowhere"): v for k, v in tuned.adapter.tensors.items()
        },
    )
    with pytest.raises(AdapterError, match="no linear layer"):
        merge_adapter(shared_encoder(minilm_path()), misplaced)


@pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning")
def test_the_merged_encoder_computes_what_peft_computes(tuned):
    import copy

    from peft import LoraConfig, get_peft_model

    base = shared_encoder(minilm_path())
    settings = LoraSettings()
    reference = get_peft_model(
        copy.deepcopy(base.model),
        LoraConfig(r=settings.rank, lora_alpha=settings.alpha, target_modules=list(settings.target_modules)),
    )
    modules = dict(reference.named_modules())
    with torch.no_grad():
        for path in tuned.adapter.modules():
            layer = modules[f"base_model.model.{path}"]
            layer.lora_A["default"].weight.copy_(tuned.adapter.tensors[f"{path}.lora_A"])
            layer.lora_B["default"].weight.copy_(tuned.adapter.tensors[f"{path}.lora_B"])
    reference.eval()
    merged = tuned.encoder()
    expected = _token_states(reference, TEXTS)
    # float32: W + s * B @ A rounds differently from W x + s * B (A x); over six layers that is about 5e-5
    assert torch.allclose(_token_states(merged.model, TEXTS), expected, atol=2e-4)
    assert not torch.allclose(_token_states(base.model, TEXTS), expected, atol=1e-3)


def test_merging_shares_every_unchanged_tensor_and_leaves_the_shared_encoder_alone(tuned, tmp_path):
    base = shared_encoder(minilm_path())
    before = base.embed(TEXTS[:3], max_length=16)
    path = save_adapter(tmp_path, tuned.adapter)
    adapted = adapted_encoder(path)
    assert adapted_encoder(path) is adapted  # one per adapter in a process
    assert encoder_for(tmp_path) is adapted and encoder_for(tmp_path / "nothing-here") is base
    changed = set()
    base_params = dict(base.model.named_parameters())
    for name, param in adapted.model.named_parameters():
        if param is not base_params[name]:
            changed.add(name.rsplit(".", 2)[-2])
            assert not param.requires_grad
    assert changed == {"query", "value"}
    assert sum(1 for name, p in adapted.model.named_parameters() if p is not base_params[name]) == 12
    assert torch.equal(base.embed(TEXTS[:3], max_length=16), before)
    assert not torch.allclose(adapted.embed(TEXTS[:3], max_length=16), before, atol=1e-3)
