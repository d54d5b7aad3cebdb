"""The logistic head of the training kit (dynaforge.tasks.training): standardisation folded into weight and bias,
binary and multinomial, row weights, a feature scale, and the weight-decay choice on held-out log-loss. Small
synthetic matrices; the plugins' trainers check the same functions against their stored heads."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from dynaforge.tasks.training import (  # noqa: E402
    LinearHead,
    choose_weight_decay,
    fit_logistic_regression,
    log_loss,
    save_head,
)


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny matrices: synchronising torch's threads would cost far more than it saves on a busy machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def binary_data(n: int = 200, d: int = 6, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    z = x @ torch.linspace(-2, 2, d, dtype=torch.float64) + 0.5
    y = (torch.rand(n, generator=g, dtype=torch.float64) < torch.sigmoid(z)).double()
    return x, y


def three_class_data(n: int = 240, d: int = 5, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 3
    centres = torch.tensor([[2.0, 0, 0, 0, 0], [0, 2.0, 0, 0, 0], [0, 0, 2.0, 0, 0]], dtype=torch.float64)
    x = centres[y] + torch.randn(n, d, generator=g, dtype=torch.float64)
    return x, y


def test_the_standardisation_is_folded_in():
    x, y = binary_data()
    head = fit_logistic_regression(x, y, weight_decay=1e-2)
    assert isinstance(head, LinearHead) and head.weight.shape == (6,) and head.bias.shape == ()
    # Rescaling and shifting each feature changes nothing once standardised: the folded head gives the same logits.
    scale = torch.tensor([3.0, 0.5, 10.0, 1.0, 7.0, 0.1], dtype=torch.float64)
    moved = fit_logistic_regression(x * scale + 4.0, y, weight_decay=1e-2)
    assert torch.allclose(head.logits(x), moved.logits(x * scale + 4.0), atol=1e-6)
    accuracy = float(((head.logits(x) >= 0).double() == y).double().mean())
    assert accuracy > 0.75
    logits = head.logits(x)
    assert abs(log_loss(logits, y) - float(torch.nn.functional.binary_cross_entropy_with_logits(logits, y))) < 1e-12


def test_weight_decay_shrinks_and_row_weights_count():
    x, y = binary_data()
    loose = fit_logistic_regression(x, y, weight_decay=1e-3)
    tight = fit_logistic_regression(x, y, weight_decay=10.0)
    assert tight.weight.norm() < loose.weight.norm() / 3
    # Doubling every row's weight is the same loss; weighting the positive rows up moves the logits up.
    same = fit_logistic_regression(x, y, weight_decay=1e-2, row_weights=torch.full_like(y, 2.0))
    assert torch.allclose(same.logits(x), fit_logistic_regression(x, y, weight_decay=1e-2).logits(x), atol=1e-6)
    favoured = fit_logistic_regression(x, y, weight_decay=1e-2, row_weights=torch.where(y == 1, 5.0, 1.0).double())
    assert favoured.logits(x).mean() > loose.logits(x).mean()


def test_multinomial_with_a_feature_scale():
    x, y = three_class_data()
    head = fit_logistic_regression(x, y, weight_decay=1e-2, classes=3)
    assert head.weight.shape == (5, 3) and head.bias.shape == (3,)
    assert float((head.logits(x).argmax(dim=1) == y).double().mean()) > 0.8
    assert abs(log_loss(head.logits(x), y) - float(torch.nn.functional.cross_entropy(head.logits(x), y))) < 1e-12
    # A zero scale switches the first two features off: their weights are exactly zero.
    scale = torch.tensor([0.0, 0.0, 1.0, 1.0, 1.0], dtype=torch.float64)
    partial = fit_logistic_regression(x, y, weight_decay=1e-2, classes=3, feature_scale=scale)
    assert torch.count_nonzero(partial.weight[:2]) == 0 and torch.count_nonzero(partial.weight[2:]) > 0
    # With scale 1 everywhere the fit equals the unscaled one (folded the other way round).
    ones = fit_logistic_regression(x, y, weight_decay=1e-2, classes=3, feature_scale=torch.ones(5, dtype=torch.float64))
    assert torch.allclose(ones.logits(x), head.logits(x), atol=1e-6)


def test_choose_weight_decay_keeps_the_lowest_held_out_log_loss():
    x, y = binary_data(300)
    fit, hold = slice(0, 200), slice(200, 300)
    grid = (1e-4, 1e-1, 1e3)
    chosen = choose_weight_decay(x[fit], y[fit], x[hold], y[hold], grid)
    assert [s["weight_decay"] for s in chosen.search] == list(grid)
    losses = [s["holdout_log_loss"] for s in chosen.search]
    assert chosen.weight_decay == grid[losses.index(min(losses))] and chosen.weight_decay != 1e3
    assert all(0.0 <= s["holdout_accuracy"] <= 1.0 for s in chosen.search)
    assert log_loss(chosen.head.logits(x[hold]), y[hold]) == min(losses)
    with pytest.raises(ValueError, match="at least one"):
        choose_weight_decay(x[fit], y[fit], x[hold], y[hold], ())


def test_save_head_writes_a_readable_safetensors_file(tmp_path):
    from safetensors import safe_open

    path = save_head(tmp_path / "new", {"weight": torch.ones(1, 3), "bias": torch.zeros(1)}, format="demo-head/1")
    assert path == tmp_path / "new" / "head.safetensors" and path.stat().st_mode & 0o777 == 0o644
    with safe_open(str(path), framework="pt") as fh:
        assert fh.metadata() == {"format": "demo-head/1"} and set(fh.keys()) == {"weight", "bias"}


def test_embedding_progress_moves_through_every_batch_of_every_call():
    """A recipe that embeds its examples and then its base data reports each batch, in order, from start to end."""
    from dynaforge.tasks.training import EmbeddingProgress, embed_texts

    heard: list[tuple[float, str]] = []
    first = [f"a short note number {i}" for i in range(5)]
    second = [f"another line, {i} of them" for i in range(7)]
    progress = EmbeddingProgress(lambda fraction, stage: heard.append((fraction, stage)), 12, start=0.05, end=0.3)
    a = embed_texts(first, max_length=16, batch_size=2, on_batch=progress.part())
    b = embed_texts(second, max_length=16, batch_size=3, on_batch=progress.part())
    assert a.shape == (5, 384) and b.shape == (7, 384)
    # 3 batches of the first call, 3 of the second
    assert [stage for _, stage in heard] == [f"embedding ({n}/12 texts)" for n in (2, 4, 5, 8, 11, 12)]
    fractions = [fraction for fraction, _ in heard]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(0.3)
    assert fractions[0] == pytest.approx(0.05 + 0.25 * 2 / 12)
