"""Each option is defined once (dpverify.options.OPTIONS): the flags of `dpverify audit` and
`dpverify gate` and the pytest plugin's `--dpverify-*` options are exactly the table's, and a bad
value gets the same message from the command line, the gate, the plugin and `dpverify.audit`
(only the option's name is spelled the way each of them spells it)."""
import argparse
import textwrap

import pytest

import dpverify
import dpverify.pipeline  # noqa: F401  (imported once, before pytester's in-process runs)
from dpverify.errors import InvalidClaimError
from dpverify.interfaces import pytest_plugin
from dpverify.interfaces.cli import build_parser, main
from dpverify.options import (AUDIT_FLAGS, COMMON_FLAGS, DEFAULT_SAMPLES_BATCHED,
                              DEFAULT_SAMPLES_SCALAR, GATE_FLAGS, OPTIONS, PLUGIN_OPTIONS,
                              default_samples)

COMMAND_FLAGS = {"audit": COMMON_FLAGS + AUDIT_FLAGS, "gate": COMMON_FLAGS + GATE_FLAGS}

MECHS = textwrap.dedent('''
    import dpverify

    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def laplace(data, rng, size):
        return data + rng.laplace(0, 1.0, size)
''')


def subcommand_parsers() -> dict:
    """{command: its argparse parser}, as `dpverify` builds them."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def spelled_options(parser: argparse.ArgumentParser) -> list[str]:
    """The parser's flags (and positional names) in the order its help lists them, without -h
    (a flag that also has a --no- form once)."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        out += action.option_strings[:1] or [action.dest]
    return out


class RecordingParser:
    """Stands in for pytest's parser: records what `pytest_addoption` adds."""

    def __init__(self):
        self.options, self.ini = [], []

    def getgroup(self, name, description=""):
        return self

    def addoption(self, *names, **settings):
        self.options.append((names, settings))

    def addini(self, name, **settings):
        self.ini.append(name)


# ------------------------------------------------------------------------------------------------
# The interfaces' options are the table's
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["audit", "gate"])
def test_cli_flags_are_the_tables(command):
    parser = subcommand_parsers()[command]
    names = COMMAND_FLAGS[command]
    assert spelled_options(parser) == [OPTIONS[name].cli.flag for name in names]
    for action in parser._actions:
        if not isinstance(action, argparse._HelpAction):
            option = OPTIONS[action.dest]
            assert option.name in names
            expected = option.cli.settings.get(
                "default", option.default if option.default is not None else action.default)
            assert action.default == expected


def test_plugin_options_are_the_tables():
    recorder = RecordingParser()
    pytest_plugin.pytest_addoption(recorder)
    assert [names for names, _ in recorder.options] == [
        (OPTIONS[name].plugin.flag,) for name in PLUGIN_OPTIONS]
    for (names, settings), name in zip(recorder.options, PLUGIN_OPTIONS):
        assert settings["default"] == OPTIONS[name].plugin_default or (
            list(settings["default"]) == list(OPTIONS[name].plugin_default))
    assert recorder.ini == [OPTIONS[name].plugin.ini for name in PLUGIN_OPTIONS
                            if OPTIONS[name].plugin.ini is not None]


def test_every_table_entry_is_offered_somewhere():
    offered_cli = set(COMMON_FLAGS + AUDIT_FLAGS + GATE_FLAGS)
    for option in OPTIONS.values():
        assert (option.cli is not None) == (option.name in offered_cli), option.name
        assert (option.plugin is not None) == (option.name in PLUGIN_OPTIONS), option.name
        assert option.cli or option.plugin or option.keyword, option.name


def test_audit_keywords_in_the_table_are_audits_parameters():
    import inspect
    parameters = inspect.signature(dpverify.audit).parameters
    for option in OPTIONS.values():
        if option.keyword is not None:
            assert option.keyword in parameters, option.name
            if option.check is not None and option.default is not None:
                assert parameters[option.keyword].default == option.default, option.name


# ------------------------------------------------------------------------------------------------
# One message per bad value
# ------------------------------------------------------------------------------------------------

BAD = [("confidence", 2.0), ("samples", 5), ("jobs", 0), ("seed", -1)]


def message(name: str, value, interface: str) -> str:
    """What dpverify.options says about `value` of option `name`, as `interface` spells it."""
    option = OPTIONS[name]
    with pytest.raises(InvalidClaimError) as caught:
        option.check(value, option.spelled(interface))
    return str(caught.value)


def unspelled(text: str, name: str, interface: str) -> str:
    return text.replace(OPTIONS[name].spelled(interface), "<option>", 1)


@pytest.mark.parametrize("name,value", BAD)
def test_the_message_is_the_same_whatever_the_interface(name, value):
    texts = {unspelled(message(name, value, i), name, i) for i in ("cli", "plugin", "audit")}
    assert len(texts) == 1 and "<option>" in texts.pop()


@pytest.mark.parametrize("command", ["audit", "gate"])
@pytest.mark.parametrize("name,value", BAD)
def test_the_command_line_says_it(tmp_path, capsys, command, name, value):
    target = tmp_path / "mechs.py"
    target.write_text(MECHS)
    gate = (["--baseline", str(tmp_path / "b.json"), "--update-baseline"] if command == "gate"
            else [])
    assert main([command, f"{target}:laplace", *gate, OPTIONS[name].cli.flag, str(value)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"dpverify: error: {message(name, value, 'cli')}"


@pytest.mark.parametrize("name,value", BAD)
def test_the_plugin_says_it(pytester, name, value):
    result = pytester.runpytest(OPTIONS[name].plugin.flag, str(value), "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {message(name, value, 'plugin')}" in result.stderr.str()


@pytest.mark.parametrize("name,value", [("confidence", 2.0), ("samples", 5), ("seed", -1),
                                        ("jobs", 0)])
def test_audit_says_it(name, value):
    mech = dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])(
        lambda data, rng, size: data + rng.laplace(0, 1.0, size))
    with pytest.raises(InvalidClaimError) as caught:
        dpverify.audit(mech, **{OPTIONS[name].keyword: value})
    assert str(caught.value) == message(name, value, "audit")


# ------------------------------------------------------------------------------------------------
# The default sample size
# ------------------------------------------------------------------------------------------------

def test_default_samples_by_form_and_declaration():
    batched = dpverify.mechanism(epsilon=1.0)(lambda data, rng, size: rng.random(size))
    scalar = dpverify.mechanism(epsilon=1.0)(lambda data, rng: rng.random())
    declared = dpverify.mechanism(epsilon=1.0, samples=5000)(lambda data, rng: rng.random())
    assert default_samples(batched) == DEFAULT_SAMPLES_BATCHED
    assert default_samples(scalar) == DEFAULT_SAMPLES_SCALAR
    assert default_samples(declared) == 5000


def test_the_audit_functions_defaults_are_the_tables():
    """`dpverify.audit`'s signature and `pipeline.build_request` (which tests reach through
    `audit_with_settings`) have the same defaults, and those are the options table's."""
    import inspect
    from dpverify.auditing import audit
    from dpverify.pipeline import build_request
    audit_defaults = {n: p.default for n, p in inspect.signature(audit).parameters.items()
                      if p.default is not inspect.Parameter.empty}
    built = {n: p.default for n, p in inspect.signature(build_request).parameters.items()
             if p.default is not inspect.Parameter.empty}
    assert set(built) == set(audit_defaults) - {"zcdp", "gdp", "tradeoff", "profile"}
    assert all(built[n] == audit_defaults[n] for n in built)
    for option in OPTIONS.values():
        if option.keyword in ("confidence", "seed", "n_jobs", "samples", "time_limit",
                              "seconds", "epsilon", "delta"):
            assert audit_defaults[option.keyword] == option.default, option.name


@pytest.mark.parametrize("claim, words", [(dict(zcdp=0.5), "ρ-zCDP"), (dict(rdp=(2.0, 1.0)), "RDP"),
                                          (dict(gdp=1.0), "curve")])
@pytest.mark.parametrize("option, spelled", [(dict(curves=True), "curves="),
                                             (dict(stop_early=False), "stop_early=False"),
                                             (dict(stop_early=False, seconds=1.0), "seconds="),
                                             (dict(confirm=True), "confirm=")])
def test_options_of_an_epsilon_delta_claim_are_refused_beside_any_other_claim(claim, words,
                                                                              option, spelled):
    """One rule for every kind of claim (options.check_fits_claim), before any run."""
    @dpverify.mechanism(pairs=[(0.0, 1.0)], **claim)
    def never(data, rng, size):
        raise AssertionError("must not run")
    with pytest.raises(InvalidClaimError) as caught:
        dpverify.audit(never, **option)
    assert spelled in str(caught.value) and words in str(caught.value)
