"""pamd.toml's defaults have one source, the dataclasses of pamd.core.config; the template
people read says the same values."""

from __future__ import annotations

import tomllib
from importlib import resources

import pytest

from pamd.core import config
from pamd.errors import PamdError


def template() -> dict:
    return tomllib.loads(resources.files("pamd.templates").joinpath("brain/pamd.toml").read_text("utf-8"))


def test_the_template_holds_exactly_the_defaults():
    want, got = config.defaults(), template()

    def walk(a: dict, b: dict, where: str) -> list[str]:
        out = [f"{where}{k}: missing from the template" for k in a if k not in b]
        out += [f"{where}{k}: in the template, not in pamd.core.config" for k in b if k not in a]
        for k in a.keys() & b.keys():
            if isinstance(a[k], dict) and isinstance(b[k], dict):
                out += walk(a[k], b[k], f"{where}{k}.")
            elif a[k] != b[k] or type(a[k]) is bool is not type(b[k]):
                out.append(f"{where}{k}: {a[k]!r} in pamd.core.config, {b[k]!r} in the template")
        return out

    assert walk(want, got, "") == []


def test_settings_of_an_empty_or_partial_config_are_the_defaults():
    s = config.settings({})
    assert s == config.Settings()
    assert s.index.fusion_k == 10 and s.index.fusion == "learned"
    partial = config.settings({"index": {"fusion": "rrf"}, "tiers": {"budgets": {"L0": 30}}})
    assert partial.index.fusion == "rrf" and partial.index.fusion_k == 10
    assert partial.tiers.budgets["L0"] == 30 and partial.tiers.budgets["L4"] == 100000
    assert partial.tiers.clock[0] == config.ClockStep(below=0.3, hours=0.5)
    assert partial.summarizer.prices["gemini-2.5-flash"].cache_read is None


def test_a_brains_own_type_and_price_take_the_shape_of_the_built_in_ones():
    s = config.settings({"hippocampus": {"types": {"note": {"importance": 0.7}}},
                         "summarizer": {"prices": {"my-model": {"input": 2.0}}}})
    assert s.hippocampus.types["note"] == config.TypeSettings(importance=0.7)
    assert s.hippocampus.types["decision"].importance == 0.9
    assert s.summarizer.prices["my-model"] == config.Price(input=2.0)


def test_a_bad_value_is_one_line_with_a_hint():
    with pytest.raises(PamdError) as exc:
        config.load('[index]\nfusion_k = "ten"\n')
    assert exc.value.message == 'pamd.toml: [index] fusion_k: expected a number, got "ten"'
    assert exc.value.hint == "fix it in pamd.toml"


def test_typed_settings_pass_through_so_a_function_may_take_either():
    s = config.settings({"myelin": {"thin": 2}})
    assert config.settings(s) is s and s.myelin.thin == 2


def test_peers_and_secret_formats_are_typed_too():
    raw = {"synapse": {"publish_branch": "pamd/publish", "alice": {"url": "../a"},
                       "bob": {"url": "../b", "ref": "main"}, "odd": 5},
           "redact": {"patterns": [{"name": "pin", "regex": r"PIN (\d+)", "group": 1}]}}
    assert config.peers(raw) == {"alice": config.Peer(url="../a"), "bob": config.Peer("../b", "main"),
                                 "odd": None}
    assert config.peers({}) == {} and config.settings({}).redact.patterns is None
    assert config.settings(raw).redact.patterns == [config.RedactPattern("pin", r"PIN (\d+)", 1)]
