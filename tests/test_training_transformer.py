"""Transformers trained through minitvm.training.TorchTrainer against torch eager: a
torch.nn.TransformerEncoder classifier and a HuggingFace BERT built offline from its config,
same init and data, losses and final weights compared after a few steps."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from minitvm.testing.torch_reference import train_steps
from minitvm.training import TorchTrainer, TrainError

STEPS, VOCAB = 4, 50


def _encoder(d_model=32, layers=2, classes=3, dropout=0.0, causal=False):
    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, d_model)
            layer = nn.TransformerEncoderLayer(d_model, 4, 2 * d_model, dropout, batch_first=True)
            self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(d_model, classes)

        def forward(self, x):
            mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1]) if causal else None
            return self.head(self.enc(self.emb(x), mask=mask, is_causal=causal).mean(1))

    torch.manual_seed(0)
    return Encoder()


def _token_batches(batch, seq, classes, n=STEPS):
    g = torch.Generator().manual_seed(0)
    return [
        (
            torch.randint(0, VOCAB, (batch, seq), generator=g),
            torch.randint(0, classes, (batch,), generator=g),
        )
        for _ in range(n)
    ]


def _compare(make_model, batches, loss_fn, lr=0.05):
    """Train both for len(batches) SGD steps; assert losses and final weights agree."""
    trainer = TorchTrainer(make_model(), batches[0], loss_fn, ("sgd", {"lr": lr}))
    ours = [trainer.step(x, y) for x, y in batches]
    ref_model = make_model()
    ref = train_steps(ref_model, batches, lambda ps: torch.optim.SGD(ps, lr=lr), loss_fn)
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-6)
    state = trainer.state_dict()
    for name, p in ref_model.named_parameters():
        np.testing.assert_allclose(
            state[name], p.detach().numpy(), rtol=1e-4, atol=1e-6, err_msg=name
        )
    # the losses moved: the comparison is of a training run, not of the initial weights
    assert any(
        not np.allclose(state[n], p.detach().numpy()) for n, p in make_model().named_parameters()
    )
    return trainer, ref_model


def test_transformer_encoder_trains_like_torch_eager():
    _compare(_encoder, _token_batches(2, 8, 3), nn.CrossEntropyLoss())


@pytest.mark.slow
def test_causal_transformer_encoder_trains_like_torch_eager():
    # a causal mask reaches scaled_dot_product_attention as an additive float mask
    _compare(
        lambda: _encoder(layers=1, causal=True), _token_batches(2, 6, 3), nn.CrossEntropyLoss()
    )


def test_attention_dropout_in_training_mode_is_refused():
    model = _encoder(layers=1, dropout=0.1).train()
    x, y = _token_batches(2, 6, 3, n=1)[0]
    with pytest.raises(TrainError, match="attention dropout is not supported"):
        TorchTrainer(model, (x, y), nn.CrossEntropyLoss())


def test_tied_weights_train_as_one_parameter():
    """An output layer sharing the embedding's weight (GPT-2's lm_head) gets the sum of both
    uses' gradients, and state_dict() gives it under both names."""

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.emb = nn.Embedding(VOCAB, 16)
            self.mix = nn.Linear(16, 16)
            self.out = nn.Linear(16, VOCAB, bias=False)
            self.out.weight = self.emb.weight

        def forward(self, x):
            return self.out(torch.tanh(self.mix(self.emb(x)))).mean(1)

    trainer, ref = _compare(Tied, _token_batches(3, 5, VOCAB), nn.CrossEntropyLoss(), 0.5)
    for (name, p), q in zip(ref.named_parameters(), trainer.parameters(), strict=True):
        np.testing.assert_allclose(q, p.detach().numpy(), rtol=1e-4, atol=1e-6, err_msg=name)
    state = trainer.state_dict()
    np.testing.assert_array_equal(state["out.weight"], state["emb.weight"])
    fresh = Tied()
    fresh.load_state_dict(trainer.state_dict(as_torch=True))
    np.testing.assert_array_equal(fresh.out.weight.detach().numpy(), state["emb.weight"])


def test_embedding_padding_row_gets_no_gradient():
    """nn.Embedding(padding_idx=0) (BERT's word embeddings): torch leaves the padding row out
    of the lookup's gradient; with weight decay it still shrinks, in both."""

    def make():
        torch.manual_seed(0)
        return nn.Sequential(nn.Embedding(VOCAB, 8, padding_idx=0), nn.Flatten(), nn.Linear(32, 3))

    g = torch.Generator().manual_seed(0)
    batches = [
        (torch.randint(0, 3, (4, 4), generator=g), torch.randint(0, 3, (4,), generator=g))
        for _ in range(STEPS)
    ]
    assert all((x == 0).any() for x, _ in batches)
    spec = ("sgd", {"lr": 0.5, "weight_decay": 0.1})
    trainer = TorchTrainer(make(), batches[0], nn.CrossEntropyLoss(), spec)
    ours = [trainer.step(x, y) for x, y in batches]
    ref = make()
    opt = lambda ps: torch.optim.SGD(ps, lr=0.5, weight_decay=0.1)
    np.testing.assert_allclose(ours, train_steps(ref, batches, opt), rtol=1e-4, atol=1e-6)
    for name, p in ref.named_parameters():
        np.testing.assert_allclose(
            trainer.state_dict()[name], p.detach().numpy(), rtol=1e-4, atol=1e-6, err_msg=name
        )
    row0 = ref[0].weight.detach().numpy()[0]
    np.testing.assert_allclose(row0, make()[0].weight.detach().numpy()[0] * 0.95**STEPS, rtol=1e-5)


def test_hf_bert_trains_like_torch_eager():
    pytest.importorskip("transformers")
    from minitvm.testing import hf_models

    def make():
        return hf_models.build("hf_bert", "tiny", seed=0).model

    case = hf_models.build("hf_bert", "tiny", seed=0)
    g = torch.Generator().manual_seed(0)
    batches = [
        (case.make_input(2, k), torch.randint(0, case.config.num_labels, (2,), generator=g))
        for k in range(STEPS)
    ]
    trainer, ref_model = _compare(make, batches, nn.CrossEntropyLoss())
    # the eval forward (a second import, with the kernels the importer emitted) agrees too
    x = batches[0][0]
    with torch.no_grad():
        expected = ref_model(x).numpy()
    np.testing.assert_allclose(trainer.eval_forward(x), expected, rtol=1e-4, atol=1e-5)
