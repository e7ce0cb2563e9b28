"""The reference pages are the code's: settings and stats checked both ways.

docs/reference/settings.rst: every setting the package reads has an entry,
every entry is a setting the package reads, and each entry's default is the
one the code applies (``DEFAULTS``, the literal default of every place that
reads it, or Scrapy's own). docs/reference/stats.rst: every ``robotstxt/``
stat the package sets is listed, and nothing else. The names are found by
reading the package's source (its syntax tree), not from a hand-kept list.
"""

from __future__ import annotations

import ast
import contextlib
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings, default_settings

from scrapy_googlerobots.policy.fetch_policy import FetchOutcome
from scrapy_googlerobots.policy.tdm import TDMREP_JSON
from scrapy_googlerobots.runtime.config import DEFAULTS
from scrapy_googlerobots.stores.factory import build_store
from scrapy_googlerobots.stores.memory import MemoryPolicyStore

from docs_text import ROOT, SettingEntry, documented_settings, documented_stats, section

PACKAGE = ROOT / "scrapy_googlerobots"
DOCUMENTED = documented_settings()


def _trees() -> list[tuple[Path, ast.Module]]:
    return [
        (path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
        for path in sorted(PACKAGE.rglob("*.py"))
    ]


def _function_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _is_setting_name(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith("ROBOTSTXT_")
        and node.value.replace("_", "").isalpha()
        and node.value.isupper()
    )


def _settings_read() -> dict[str, list[tuple[str, Any]]]:
    """Setting name -> (where, literal default or ...) for every call that reads it.

    A read is a call given the name as an argument (``settings.getfloat(NAME,
    60.0)``, ``reader.seconds(NAME)``, ``_positive(settings, NAME, 1.0)``),
    except ``set*`` calls; the argument after the name is its default when it
    is a literal (``...`` otherwise).
    """
    reads: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for path, tree in _trees():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or _function_name(node).startswith("set"):
                continue
            for index, argument in enumerate(node.args):
                if not _is_setting_name(argument):
                    continue
                assert isinstance(argument, ast.Constant)
                default: Any = ...
                following = node.args[index + 1 : index + 2]
                if following:
                    with contextlib.suppress(ValueError):  # not a literal
                        default = ast.literal_eval(following[0])
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                reads[argument.value].append((where, default))
    return reads


READS = _settings_read()


def test_every_setting_the_code_reads_is_documented() -> None:
    missing = sorted((set(READS) | set(DEFAULTS)) - set(DOCUMENTED))
    assert not missing, f"add an entry to docs/reference/settings.rst for {missing}"


def test_every_documented_setting_is_read_by_the_code() -> None:
    unknown = sorted(set(DOCUMENTED) - set(READS) - set(DEFAULTS))
    assert not unknown, f"documented but never read: {unknown}"


def _code_default(entry: SettingEntry) -> Any:
    """The default the code applies, from the one place that knows it."""
    name = entry.name
    if name in DEFAULTS:
        return DEFAULTS[name]
    literals = {default for _, default in READS.get(name, []) if default is not ...}
    if len(literals) == 1:
        return literals.pop()
    if hasattr(default_settings, name):  # a Scrapy setting (ROBOTSTXT_OBEY)
        return getattr(default_settings, name)
    if name == "ROBOTSTXT_CACHE_STORE":  # read without a default: no value means memory
        store = build_store(Settings({"JOBDIR": None}))
        assert isinstance(store, MemoryPolicyStore)
        return "memory"
    raise AssertionError(f"{name}: no default to check; put it in config.DEFAULTS")


@pytest.mark.parametrize("name", list(DOCUMENTED))
def test_the_documented_default_is_the_codes(name: str) -> None:
    entry = DOCUMENTED[name]
    assert entry.default == _code_default(entry), entry.default_text


@pytest.mark.parametrize("name", sorted(READS))
def test_every_literal_default_in_the_code_agrees_with_the_docs(name: str) -> None:
    # E.g. the store factory's settings.getint("ROBOTSTXT_CACHE_SIZE", 10_000).
    documented = DOCUMENTED[name].default
    for where, default in READS[name]:
        if default is not ...:
            assert default == documented, f"{where} defaults to {default!r}"


@pytest.mark.parametrize("name", list(DOCUMENTED))
def test_default_and_examples_have_the_documented_type(name: str) -> None:
    entry = DOCUMENTED[name]
    assert entry.types, f"{name}: the Type line names no type: {entry.type_text}"
    assert entry.examples, f"{name}: the entry needs a python example assigning it"
    assert isinstance(entry.default, entry.types), entry.default_text
    for example in entry.examples:
        assert isinstance(ast.literal_eval(example), entry.types), example


# Modules counting a policy file's fetches under robots.txt's names (robotstxt/...),
# which FileKind.stat renames for every other shipped file (robotstxt/tdmrep/...).
_PER_FILE = ("fetcher.py", "file_reports.py")
_OTHER_FILES = (TDMREP_JSON,)


def _stats_set() -> tuple[set[str], set[str]]:
    """(stat names, prefixes of stat names built with an f-string) in the package."""
    names: set[str] = set()
    prefixes: set[str] = set()
    for path, tree in _trees():
        found_names, found_prefixes = _stats_in(tree)
        names |= found_names
        prefixes |= found_prefixes
        if path.name in _PER_FILE:
            for kind in _OTHER_FILES:
                names |= {kind.stat(name) for name in found_names}
                prefixes |= {kind.stat(prefix) for prefix in found_prefixes}
    return names, prefixes


def _stats_in(tree: ast.Module) -> tuple[set[str], set[str]]:
    names: set[str] = set()
    prefixes: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value
            # (an f-string's leading part is a Constant too: it ends with "/")
            if value.startswith("robotstxt/") and " " not in value and value[-1] != "/":
                names.add(value)
        elif isinstance(node, ast.JoinedStr) and node.values:
            head = node.values[0]
            if isinstance(head, ast.Constant) and isinstance(head.value, str):
                prefix = head.value
                # "robotstxt/{name}" only reads stats (the summary); a family has its own prefix
                if prefix.startswith("robotstxt/") and prefix.count("/") >= 2:
                    prefixes.add(prefix)
    return names, prefixes


STAT_NAMES, STAT_PREFIXES = _stats_set()
STATS = documented_stats()


def test_the_stats_scan_finds_the_stats() -> None:
    # The scan itself works: known stats and families are found.
    assert {"robotstxt/forbidden", "robotstxt/store/errors"} <= STAT_NAMES
    assert "robotstxt/response_status_count/" in STAT_PREFIXES


def test_every_stat_the_code_sets_is_documented() -> None:
    families = [stat.split("<", 1)[0] for stat in STATS if "<" in stat]
    # robotstxt/tdmrep/<fetch stat> documents robots.txt's fetch stats under another
    # file's prefix (the entry's name has a space: documented_stats leaves it out).
    text = (ROOT / "docs" / "reference" / "stats.rst").read_text(encoding="utf-8")
    per_file = tuple(k.stats for k in _OTHER_FILES if f"stat:: {k.stats}<fetch stat>" in text)
    missing = sorted(n for n in STAT_NAMES - set(STATS) if not n.startswith(per_file))
    assert not missing, f"add to docs/reference/stats.rst: {missing}"
    for prefix in STAT_PREFIXES:
        documented = prefix in families or any(s.startswith(prefix) for s in STATS)
        assert documented or prefix.startswith(per_file), prefix


def test_every_documented_stat_is_set_by_the_code() -> None:
    assert len(STATS) == len(set(STATS)), "a stat is listed twice"
    for stat in STATS:
        if "<" in stat:
            assert stat.split("<", 1)[0] in STAT_PREFIXES, stat
        else:
            assert stat in STAT_NAMES or stat.startswith(tuple(STAT_PREFIXES)), stat


def test_every_fetch_outcome_stat_is_documented() -> None:
    documented = {
        s.removeprefix("robotstxt/outcome/") for s in STATS if s.startswith("robotstxt/outcome/")
    }
    assert documented == {outcome.value for outcome in FetchOutcome}


def _loggers() -> dict[str, list[str]]:
    """Module name -> where each ``logging.getLogger(...)`` call of the package is, by argument."""
    found: dict[str, list[str]] = defaultdict(list)
    for path, tree in _trees():
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _function_name(node) == "getLogger":
                found[module].append(ast.unparse(node.args[0]) if node.args else "")
    return found


LOGGERS = _loggers()
# Logger names as the docs spell them: ``scrapy_googlerobots.<folder>.<module>``.
_DOC_LOGGER = re.compile(r"``(scrapy_googlerobots(?:\.\w+)+|scrapy_googlerobots\.\w+\.\*)``")


def test_every_logger_is_named_by_its_module() -> None:
    assert LOGGERS, "the scan found no logger"
    named_otherwise = {m: args for m, args in LOGGERS.items() if args != ["__name__"]}
    assert not named_otherwise, f"use logging.getLogger(__name__): {named_otherwise}"


def test_every_logger_the_docs_name_is_a_module_that_logs() -> None:
    logs = (ROOT / "docs" / "reference" / "logs.rst").read_text(encoding="utf-8")
    internals = (ROOT / "docs" / "internals.rst").read_text(encoding="utf-8")
    table = section(internals, "Finding the code behind a log line")
    named = set(_DOC_LOGGER.findall(logs))
    in_table = set(_DOC_LOGGER.findall(table))
    assert named and in_table, "the docs scan found no logger name"
    for name in named | in_table:
        if name.endswith(".*"):
            assert any(m.startswith(name[:-1]) for m in LOGGERS), name
        else:
            assert name in LOGGERS, f"{name} is not a module with a logger"
    untabled = [
        m for m in LOGGERS if m not in in_table and f"{m.rsplit('.', 1)[0]}.*" not in in_table
    ]
    assert not untabled, f"add to internals.rst's logger table: {untabled}"
