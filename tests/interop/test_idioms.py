"""`ckpt to-onnx` on the idioms of users' models (`models/idioms.py`): `diff`, `cumsum`,
the `*_like` factories and `empty_like(...).fill_`, in-place dropouts in eval mode, `sin`
and `cos` of activations, additive attention masks built from an `attention_mask` input
(bidirectional as in BERT, causal from `full(...).triu(1)` as in decoders), and an int64
per-sample timestep as diffusers passes it, and gathers within each sample by indexing the
batch with `arange` over it (CLIP's text pooling at the end token, tokens picked per sample
by computed positions, negative ones included, and transformers' `padding_mask[batch_idx,
kv_idx]` mask lookup, and a boolean causal and padding mask passed to SDPA, whole rows
masked included (so too an additive −∞ mask, computed or stored: torch gives such a row
zeros, not the NaN of a plain softmax), and T5's position bias selected by one), arithmetic at torch's promoted type
(an int64 timestep times int64 ones, then a float table), ultralytics' anchors (`type_as` of
constants, `new_full` by a stored stride's `item()`), and RoBERTa's position ids (`cumsum`
of an int32 mask is int64; token types gathered from a buffer row), ViT's class token
expanded over the batch beside patch tokens holding ±∞ and NaN (the token must stay the
stored one), stored masks and biases expanded or repeated over the batch and then folded
into Swin's windows or WavLM's batch × heads, and timm's (q, k, v stacked before the batch
and unbound, a pad to the window computed from sizes, a −∞ pad, a number raised to a
constant tensor), the batch folded or
moved by size arithmetic (`nn.MultiheadAttention` on sequence-first inputs viewing to `bsz *
num_heads` rows, transformers' Conv1D folding the tokens into rows with `view(-1, d)`,
kornia's filters taking each channel as a sample, einops' sizes multiplied in place), a size
and a 0-d constant made tensors (DeBERTa's attention scale, kornia's brightness factor,
`clamp_` by numbers), `torch.min`/`torch.max` of two tensors (T5's and MPNet's position
buckets), sizes computed through 0-d tensors (DINOv2's `int(sqrt(n - 1))`, MobileViT's
ceil and floor division of sizes), DeBERTa's scores gathered by clamped int64
positions expanded over batch × heads, kornia's mask of non-finite pixels (`isfinite` is
bool), MobileBERT's shifted tokens (a pad list whose last pair reaches the batch and pads it by
nothing), Falcon's key and value heads picked by negative indices, SEW-D's masked softmax
(an autograd.Function whose in-place `masked_fill_` torch.export keeps; torch.jit.trace cannot
record it), integer arithmetic on token ids (min, max and clamp of int64 tensors, which
ONNX's Min, Max and Clip take only from opset 12; numbers beyond float32's 2^24, exact at
int64, in arithmetic and in factories, over the batch or not), and gcvit's global query
repeated over each image's windows by a quotient of traced batch sizes, and timm's rotary
embedding beside an empty prefix of tokens (a trace slices `q[:, :, :0, :]` on every
dimension), and XLNet's sequence-first tokens (ids looked up and a padding mask compared with
the batch on their second dimension, positions expanded over the batch in an einsum, a
one-operand einsum moving the batch first), and splits whose overload the argument's type
picks (`hsplit(x, 2)` by a count, `hsplit(x, [1, 4])` by indices, `dsplit`, `tensor_split`),
and DLRM's `nn.EmbeddingBag` of `[batch, length]` ids (sum, mean and max with a padding id,
per-sample weights; `.pt2` only), an in-place op on a detached alias under `no_grad` (the
tensor it aliases sees the change), and RT-DETR's sine position embedding (`torch.outer` of constant positions and frequencies,
in float32 and in float64 as transformers computes it),
kornia's brightness factor, a 0-d constant unsqueezed to the image's rank, RT-DETR's
`torch.concat` (an alias, read as `cat`), RAFT's
`linspace` of numbers, `topk` of per-sample scores (values and indices), and Longformer's
put by a bool mask (`mask[ids == 2] = v`, traces only).
Each is exported with
torch.export and a dynamic batch, and (all but the int64
timestep scale) traced with torch.jit.trace at batch 2; the ONNX file
must pass `onnx.checker.check_model(full_check=True)`, be opset 11 with only ops ATC parses
there (none of Shape/Expand/ConstantOfShape/NonZero/Identity/Loop/If), and match torch eager
in onnxruntime at batch 1, 3 and 5 from one file.
"""
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from _coverage import atc_ops
from _util import ok, run_ckpt

sys.path.insert(0, str(Path(__file__).resolve().parent / "models"))
import idioms  # noqa: E402

S, D = idioms.S, idioms.D
BANNED = {"Shape", "Expand", "ConstantOfShape", "NonZero", "Identity", "Loop", "If"}


def float_input(b, gen):
    return torch.randn(b, D, generator=gen)


def tokens(b, gen):
    return torch.randn(b, S, D, generator=gen)


def mask(b, gen):
    # Each sample keeps a different number of leading positions (at least one).
    keep = torch.randint(1, S + 1, (b,), generator=gen)
    return (torch.arange(S)[None, :] < keep[:, None]).long()


def holes(b, gen):
    # Any position may be padding, the first included: SDPA then masks whole rows.
    return torch.randint(0, 2, (b, S), generator=gen)


def scores(b, gen):
    return torch.randn(b, S, S, generator=gen)


def timestep(b, gen):
    return torch.randint(0, 1000, (b,), generator=gen)


def special_tokens(b, gen):
    # Non-finite values in every sample's first token, beside which the class token stands.
    x = tokens(b, gen)
    x[:, 0, 0], x[:, 0, 1], x[:, 0, 2] = float("inf"), float("-inf"), float("nan")
    return x


def ids(b, gen):
    return torch.randint(0, 9, (b, S), generator=gen)


def padded_ids(b, gen):
    # Ids 0..8 where 1 is the padding id: each sample's first two, and all of the last
    # sample's (an empty bag, which mean and max give as zeros).
    ids = torch.randint(0, 9, (b, S), generator=gen)
    ids[:, :2] = 1
    ids[-1] = 1
    return ids


def positions(b, gen):
    # Three positions per sample, negative ones counting from the end as Python does.
    return torch.randint(-S, S, (b, 3), generator=gen)


# name: (model, input makers)
MODELS = {
    "diff": (idioms.Diff, [float_input]),
    "cumsum": (idioms.Cumsum, [float_input]),
    "likes": (idioms.Likes, [float_input]),
    "dropouts": (idioms.Dropouts, [float_input]),
    "sincos": (idioms.SinCos, [float_input]),
    "bidirectional_mask": (idioms.Bidirectional, [tokens, mask]),
    "causal_mask": (idioms.Causal, [tokens, mask]),
    "timestep": (idioms.Timestep, [float_input, timestep]),
    "pool": (idioms.Pool, [tokens, ids]),
    "pick_tokens": (idioms.PickTokens, [tokens, positions]),
    "padding_lookup": (idioms.PaddingLookup, [tokens, mask]),
    "sdpa_mask": (idioms.SdpaMask, [tokens, holes]),
    "sdpa_inf_mask": (idioms.SdpaInfMask, [tokens, holes]),
    "sdpa_hidden_row": (idioms.SdpaHiddenRow, [tokens]),
    "position_bias": (idioms.PositionBias, [tokens, mask]),
    "timestep_scale": (idioms.TimestepScale, [float_input, timestep]),
    "anchors": (idioms.Anchors, [float_input]),
    "stride_anchors": (idioms.StrideAnchors, [float_input]),
    "position_ids": (idioms.PositionIds, [tokens, ids]),
    "class_token": (idioms.ClassToken, [special_tokens]),
    "window_mask": (idioms.WindowMask, [tokens]),
    "repeated_bias": (idioms.RepeatedBias, [tokens]),
    "qkv_attention": (idioms.QkvAttention, [tokens]),
    "window_pad": (idioms.WindowPad, [tokens]),
    "fourier_scale": (idioms.FourierScale, [tokens]),
    "seq_first_attention": (idioms.SeqFirstAttention, [tokens]),
    "folded_rows": (idioms.FoldedRows, [tokens]),
    "channels_as_samples": (idioms.ChannelsAsSamples, [tokens]),
    "size_product": (idioms.SizeProduct, [tokens]),
    "size_scale": (idioms.SizeScale, [tokens]),
    "bucket_min": (idioms.BucketMin, [tokens]),
    "size_root": (idioms.SizeRoot, [tokens]),
    "non_finite_pixels": (idioms.NonFinitePixels, [special_tokens]),
    "gather_scores": (idioms.GatherScores, [tokens]),
    "shifted_tokens": (idioms.ShiftedTokens, [tokens]),
    "fused_qkv": (idioms.FusedQkv, [tokens]),
    "in_place_masked_softmax": (idioms.InPlaceMaskedSoftmax, [scores, holes]),
    "integer_extremes": (idioms.IntegerExtremes, [ids]),
    "exact_integers": (idioms.ExactIntegers, [ids]),
    "global_query": (idioms.GlobalQuery, [tokens]),
    "rotary_prefix": (idioms.RotaryPrefix, [tokens]),
    "seq_first_tokens": (idioms.SeqFirstTokens, [ids, mask]),
    "splits_by_type": (idioms.SplitsByType, [tokens]),
    "sine_positions": (idioms.SinePositions, [tokens]),
    "double_sine_positions": (idioms.DoubleSinePositions, [tokens]),
    "number_spacing": (idioms.NumberSpacing, [tokens]),
    "top_scores": (idioms.TopScores, [tokens]),
    "masked_put": (idioms.MaskedPut, [tokens, ids]),
    "broadcast_factor": (idioms.BroadcastFactor, [tokens]),
    "concat_alias": (idioms.ConcatAlias, [tokens]),
    "embedding_bags": (idioms.EmbeddingBags, [padded_ids]),
    "in_place_through_detach": (idioms.InPlaceThroughDetach, [float_input]),
    "writes_into_parts": (idioms.WritesIntoParts, [float_input]),
}
# The ONNX op that shows the lowering ran.
EXPECTED = {"diff": "Sub", "cumsum": "CumSum", "sincos": "Sin", "timestep": "Cos",
            "causal_mask": "Softmax", "bidirectional_mask": "Softmax",
            "pool": "GatherElements", "pick_tokens": "Where", "padding_lookup": "Softmax",
            "sdpa_mask": "Where", "sdpa_inf_mask": "Equal", "sdpa_hidden_row": "Equal",
            "position_bias": "Where", "timestep_scale": "Cast",
            "position_ids": "CumSum", "qkv_attention": "Softmax", "window_pad": "MaxPool",
            "fourier_scale": "Div",
            "seq_first_attention": "Softmax", "folded_rows": "MatMul",
            "channels_as_samples": "Conv", "size_scale": "Clip", "bucket_min": "Max",
            "size_root": "ReduceSum", "non_finite_pixels": "Where",
            "gather_scores": "GatherElements", "integer_extremes": "Where", "shifted_tokens": "Pad",
            "global_query": "Softmax", "seq_first_tokens": "Gather", "splits_by_type": "Split",
            "top_scores": "TopK", "masked_put": "Where", "broadcast_factor": "Clip",
            "concat_alias": "Concat", "embedding_bags": "ReduceMax",
            "in_place_through_detach": "Relu", "writes_into_parts": "Concat"}



def export(model, makers, path):
    gen = torch.Generator().manual_seed(0)
    example = tuple(m(2, gen) for m in makers)
    batch = torch.export.Dim("batch")
    program = torch.export.export(model, example,
                                  dynamic_shapes=tuple({0: batch} for _ in makers))
    torch.export.save(program, str(path))


def trace(model, makers, path):
    gen = torch.Generator().manual_seed(0)
    example = tuple(m(2, gen) for m in makers)
    with torch.no_grad():
        traced = torch.jit.trace(model, example, check_trace=False)
    torch.jit.save(traced, str(path))


# The idioms the TorchScript route exports too, traced at batch 2 (the trace's code holds
# the batch as `x.size(0)`, the strides as 0-d constants read back with `annotate(number)`).
# Traces refuse these (an int64 timestep times a float; attention masks whose batch size a
# trace records as a value; an autograd.Function, which torch.jit.trace cannot record;
# `nn.EmbeddingBag`'s offsets, which a trace computes as a range as long as the batch): the
# `.pt2` route converts them.
TRACED = sorted(set(MODELS) - {"timestep_scale", "sdpa_inf_mask", "sdpa_hidden_row",
                               "in_place_masked_softmax", "embedding_bags"})


# The idioms only the TorchScript route reads: a `.pt2` program holds `index_put_`, which
# has no row in the aten table.
TRACE_ONLY = {"masked_put"}


@pytest.mark.parametrize("name", sorted(set(MODELS) - TRACE_ONLY))
def test_idiom_exports_atc_clean_and_matches_torch(name, tmp_path):
    build, makers = MODELS[name]
    model = build().eval()
    archive = tmp_path / f"{name}.pt2"
    export(model, makers, archive)
    check_export(name, model, makers, archive, tmp_path)


@pytest.mark.parametrize("name", TRACED)
def test_traced_idiom_exports_atc_clean_and_matches_torch(name, tmp_path):
    build, makers = MODELS[name]
    model = build().eval()
    archive = tmp_path / f"{name}.pt"
    trace(model, makers, archive)
    check_export(name, model, makers, archive, tmp_path)


def check_export(name, model, makers, archive, tmp_path):
    out = tmp_path / f"{name}.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", out))
    proto = onnx.load(str(out))
    onnx.checker.check_model(proto, full_check=True)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 11)]
    ops = {n.op_type for n in proto.graph.node}
    assert not ops & BANNED, sorted(ops & BANNED)
    assert ops <= atc_ops(), sorted(ops - atc_ops())
    if name in EXPECTED:
        assert EXPECTED[name] in ops, sorted(ops)
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    gen = torch.Generator().manual_seed(5)
    for b in (1, 3, 5):
        inputs = [m(b, gen) for m in makers]
        with torch.no_grad():
            ref = model(*inputs).numpy()
        got = session.run(None, dict(zip(names, (i.numpy() for i in inputs))))[0]
        assert got.shape == ref.shape, (got.shape, ref.shape)
        assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
        if not np.issubdtype(ref.dtype, np.floating):
            assert np.array_equal(got, ref), f"{name} batch {b}: integer values differ"
            continue
        # NaN and ±∞ where torch has them; the finite rest within the tolerance.
        special = ~np.isfinite(ref)
        assert np.array_equal(np.isnan(got), np.isnan(ref)), f"{name} batch {b}: NaN differs"
        assert np.array_equal(got[special & ~np.isnan(ref)], ref[special & ~np.isnan(ref)])
        got, ref = np.where(special, 0, got), np.where(special, 0, ref)
        diff = float(np.abs(got - ref).max())
        tol = 1e-4 * max(1.0, float(np.abs(ref).max()))
        print(f"{name} batch {b}: max |diff| {diff:.3e} (tolerance {tol:.3e})")
        assert diff <= tol, f"{name} batch {b}: max |diff| {diff:.3e} > {tol:.3e}"
