"""ckpt amp: showing and converting AMP loss-scaler state, checked with real torch 2.13."""
import json
from collections import OrderedDict

import pytest
import torch

from _util import (EXPECTED, assert_clean_error, assert_equivalent, assert_same_container,
                   fixture_path, load_input, ok, run_ckpt)

AMP_FIXTURES = [n for n, e in EXPECTED.items() if e["amp"] and e["format"] in ("zip", "legacy")]
NATIVE_KEYS = ["scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"]


def amp_key(name):
    return EXPECTED[name]["amp"]["path"]


def convert(name, to, tmp_path, *extra):
    out = tmp_path / f"{to}.pth"
    ok(run_ckpt("amp", fixture_path(name), "-o", out, "--to", to, *extra))
    assert_same_container(fixture_path(name), out)
    return out


def assert_rest_unchanged(inp, out, key):
    """Everything but the AMP entry is what torch loads from the input."""
    inp, out = dict(inp), dict(out)
    inp.pop(key), out.pop(key)
    assert_equivalent(inp, out)


def apex_expected(scale, tracker):
    """What apex's amp.state_dict() returns for one loss."""
    return OrderedDict([("loss_scaler0", {"loss_scale": float(scale), "unskipped": int(tracker)})])


def assert_apex_state(state, scale, tracker):
    assert type(state) is OrderedDict
    assert list(state.items()) == list(apex_expected(scale, tracker).items())
    inner = state["loss_scaler0"]
    assert type(inner) is dict and list(inner) == ["loss_scale", "unskipped"]
    assert type(inner["loss_scale"]) is float and type(inner["unskipped"]) is int


def assert_native_state(state, scale, tracker, npu=False):
    assert type(state) is dict
    assert list(state) == NATIVE_KEYS + (["dynamic"] if npu else [])
    assert state["scale"] == scale and type(state["scale"]) is float
    assert state["_growth_tracker"] == tracker and type(state["_growth_tracker"]) is int
    assert type(state["growth_factor"]) is float and type(state["backoff_factor"]) is float
    assert type(state["growth_interval"]) is int
    if npu:
        assert state["dynamic"] is True


@pytest.mark.parametrize("name", AMP_FIXTURES)
def test_show_json_matches_torch(name):
    shown = json.loads(ok(run_ckpt("amp", fixture_path(name), "--json")).stdout)
    assert shown["kind"] == EXPECTED[name]["amp"]["kind"]
    assert shown["path"] == amp_key(name)
    state = load_input(name)[amp_key(name)]
    if shown["kind"] == "apex":
        assert [(s["name"], s["loss_scale"], s["unskipped"]) for s in shown["scalers"]] == [
            (k, v["loss_scale"], v["unskipped"]) for k, v in state.items()]
    elif shown["kind"] in ("native", "npu"):
        assert shown["scale"] == state["scale"]
        assert shown["growth_tracker"] == state["_growth_tracker"]
        assert shown["growth_factor"] == state["growth_factor"]
        assert shown["backoff_factor"] == state["backoff_factor"]
        assert shown["growth_interval"] == state["growth_interval"]
        assert shown.get("dynamic") == state.get("dynamic")
    else:
        assert state == {}


def test_show_text_names_location_kind_and_values():
    text = ok(run_ckpt("amp", fixture_path("amp_native.pth"))).stdout
    for want in ("`scaler`", "native", "1024.0", "growth tracker", "2000"):
        assert want in text, text
    disabled = ok(run_ckpt("amp", fixture_path("amp_disabled.pth"))).stdout
    assert "disabled" in disabled, disabled


def test_apex_to_native_loads_into_grad_scaler(tmp_path):
    out = convert("amp_apex.pth", "native", tmp_path)
    inp, act = load_input("amp_apex.pth"), torch.load(out)
    apex = inp["amp"]["loss_scaler0"]
    assert_native_state(act["amp"], apex["loss_scale"], apex["unskipped"])
    scaler = torch.amp.GradScaler("cpu")
    scaler.load_state_dict(act["amp"])
    assert scaler.get_scale() == apex["loss_scale"]
    assert scaler.state_dict()["_growth_tracker"] == apex["unskipped"]
    assert scaler.get_growth_factor() == 2.0 and scaler.get_backoff_factor() == 0.5
    assert scaler.get_growth_interval() == 2000
    assert_rest_unchanged(inp, act, "amp")


def test_native_to_apex_equals_apex_state_dict(tmp_path):
    out = convert("amp_native.pth", "apex", tmp_path)
    inp, act = load_input("amp_native.pth"), torch.load(out)
    native = inp["scaler"]
    assert_apex_state(act["scaler"], native["scale"], native["_growth_tracker"])
    assert_rest_unchanged(inp, act, "scaler")


def test_to_npu_carries_dynamic(tmp_path):
    for name in ("amp_native.pth", "amp_apex.pth"):
        out = convert(name, "npu", tmp_path)
        inp, act = load_input(name), torch.load(out)
        key = amp_key(name)
        state = inp[key]
        scale, tracker = ((state["scale"], state["_growth_tracker"]) if "scale" in state else
                          (state["loss_scaler0"]["loss_scale"], state["loss_scaler0"]["unskipped"]))
        assert_native_state(act[key], scale, tracker, npu=True)
        assert_rest_unchanged(inp, act, key)


def test_npu_to_native_drops_dynamic_and_loads(tmp_path):
    out = convert("amp_npu.pth", "native", tmp_path)
    inp, act = load_input("amp_npu.pth"), torch.load(out)
    npu = inp["amp_scaler"]
    assert_native_state(act["amp_scaler"], npu["scale"], npu["_growth_tracker"])
    scaler = torch.amp.GradScaler("cpu")
    scaler.load_state_dict(act["amp_scaler"])
    assert scaler.get_scale() == npu["scale"]
    assert_rest_unchanged(inp, act, "amp_scaler")


@pytest.mark.parametrize("name", ["amp_apex.pth", "zip_train_ckpt.pth", "legacy_train_ckpt.pth"])
def test_apex_native_apex_round_trip_is_identity(name, tmp_path):
    native = convert(name, "native", tmp_path)
    back = tmp_path / "back.pth"
    ok(run_ckpt("amp", native, "-o", back, "--to", "apex"))
    assert_same_container(fixture_path(name), back)
    assert_equivalent(load_input(name), torch.load(back))


def test_lightning_native_state_converts_in_place_of_its_key(tmp_path):
    out = convert("amp_lightning.ckpt", "apex", tmp_path)
    inp, act = load_input("amp_lightning.ckpt"), torch.load(out)
    state = inp["native_amp_scaling_state"]
    assert_apex_state(act["native_amp_scaling_state"], state["scale"], state["_growth_tracker"])
    assert_rest_unchanged(inp, act, "native_amp_scaling_state")


def test_scaler_picks_one_of_several_apex_scalers(tmp_path):
    out = convert("amp_apex_multi.pth", "native", tmp_path, "--scaler", "1")
    chosen = load_input("amp_apex_multi.pth")["amp"]["loss_scaler1"]
    assert_native_state(torch.load(out)["amp"], chosen["loss_scale"], chosen["unskipped"])


def test_several_apex_scalers_without_choice_is_a_clean_error(tmp_path):
    out = tmp_path / "out.pth"
    proc = run_ckpt("amp", fixture_path("amp_apex_multi.pth"), "-o", out, "--to", "native")
    assert_clean_error(proc, "amp_apex_multi.pth", out)
    assert "loss_scaler0" in proc.stderr and "loss_scaler1" in proc.stderr
    assert "--scaler" in proc.stderr


@pytest.mark.parametrize("args", [["--to", "native"], ["--to", "apex"], ["--to", "npu"]])
def test_disabled_scaler_is_never_converted(args, tmp_path):
    out = tmp_path / "out.pth"
    proc = run_ckpt("amp", fixture_path("amp_disabled.pth"), "-o", out, *args)
    assert_clean_error(proc, "amp_disabled.pth", out)
    assert "disabled" in proc.stderr


@pytest.mark.parametrize("name,args", [
    ("zip_tinycnn_sd.pth", ["--to", "native"]),          # no AMP state at all
    ("amp_apex_multi.pth", ["--to", "native", "--scaler", "5"]),  # no loss_scaler5
    ("amp_native.pth", ["--to", "apex", "--scaler", "0"]),  # --scaler needs apex
])
def test_impossible_conversions_are_clean_errors(name, args, tmp_path):
    out = tmp_path / "out.pth"
    assert_clean_error(run_ckpt("amp", fixture_path(name), "-o", out, *args), name, out)
