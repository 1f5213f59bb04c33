"""The scope: access, read-your-writes, tracked nested mutation, copies, JSON safety, inputs."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from engine_charts import exact

from flowchart import ReadonlyInputError, RunResult, ScopeWriteError, flow_chart


def run_stages(*fns: Any, input: dict[str, Any] | None = None) -> RunResult:
    """Run ``fns`` as a linear chart ``s0 → s1 → ...``."""
    builder = flow_chart("S0", fns[0], "s0")
    for i, fn in enumerate(fns[1:], start=1):
        builder = builder.add_function(f"S{i}", fn, f"s{i}")
    return builder.build().run(input)


def ops(result: RunResult, index: int) -> list[dict[str, Any]]:
    return [op.to_dict() for op in result.commit_log[index].trace]


def test_attribute_and_item_access_read_and_write_the_same_state():
    """``scope.k`` and ``scope["k"]`` are the same key; ``in`` and iteration see it."""
    seen: list[Any] = []

    def seed(scope):
        scope.count = 1
        scope["odd-key"] = "x"

    def look(scope):
        seen.extend([scope["count"], scope.count, "odd-key" in scope, "nope" in scope, sorted(scope)])

    result = run_stages(seed, look)
    assert seen == [1, 1, True, False, ["count", "odd-key"]]
    assert result.state == {"count": 1, "odd-key": "x"}


def test_missing_attribute_raises_attribute_error_so_getattr_default_works():
    """A missing key is an ``AttributeError`` (attribute access) naming the key."""
    seen: list[Any] = []

    def stage(scope):
        seen.append(getattr(scope, "missing", "fallback"))
        with pytest.raises(
            AttributeError,
            match=exact("'missing' is not in the state (use getattr(scope, 'missing', default) for optional keys)"),
        ):
            scope.missing  # noqa: B018

    run_stages(stage)
    assert seen == ["fallback"]


def test_missing_item_raises_key_error():
    """A missing key is a ``KeyError`` (item access); deleting it too."""
    caught: list[str] = []

    def stage(scope):
        with pytest.raises(KeyError, match=r"^'missing'$"):
            scope["missing"]
        with pytest.raises(KeyError, match=r"^'missing'$"):
            del scope["missing"]
        with pytest.raises(AttributeError, match=exact("cannot delete 'missing': it is not in the state")):
            del scope.missing
        caught.append("done")

    run_stages(stage)
    assert caught == ["done"]


def test_reads_see_the_stage_own_writes_before_commit():
    """Read-your-writes: a value written in a stage is visible to that stage at once."""
    seen: list[Any] = []

    def stage(scope):
        scope.x = 1
        seen.append(scope.x)
        scope.items = [1]
        scope.items.append(2)
        seen.append(list(scope.items))
        del scope.x
        seen.append("x" in scope)

    result = run_stages(stage)
    assert seen == [1, [1, 2], False]
    assert result.state == {"items": [1, 2]}


def test_nested_dict_key_assignment_commits_a_merge_of_the_changed_keys():
    """``scope.user["name"] = "x"`` commits a ``merge`` with only the changed key."""

    def seed(scope):
        scope.user = {"name": "a", "age": 3, "prefs": {"dark": False, "lang": "en"}}

    def rename(scope):
        scope.user["name"] = "x"
        scope.user["prefs"]["dark"] = True

    result = run_stages(seed, rename)
    assert ops(result, 1) == [{"path": ["user"], "verb": "merge", "value": {"name": "x", "prefs": {"dark": True}}}]
    assert result.state["user"] == {"name": "x", "age": 3, "prefs": {"dark": True, "lang": "en"}}


def test_dict_update_commits_a_merge():
    """``scope.user.update({...})`` is a nested write: a merge of the new keys."""

    def seed(scope):
        scope.user = {"name": "a"}

    def update(scope):
        scope.user.update({"age": 4})

    result = run_stages(seed, update)
    assert ops(result, 1) == [{"path": ["user"], "verb": "merge", "value": {"age": 4}}]


def test_replacing_a_nested_dict_with_fewer_keys_commits_a_set():
    """A nested dict assigned with keys removed replaces it: the commit is a ``set``, not a merge."""

    def seed(scope):
        scope.user = {"prefs": {"a": 1, "b": 2}, "name": "x"}

    def replace(scope):
        scope.user["prefs"] = {"a": 1}

    result = run_stages(seed, replace)
    assert ops(result, 1) == [{"path": ["user"], "verb": "set", "value": {"prefs": {"a": 1}, "name": "x"}}]
    assert result.state["user"] == {"prefs": {"a": 1}, "name": "x"}


def test_deleting_a_nested_dict_key_commits_a_set():
    """A removed dict key cannot be merged: the whole top-level key is set."""

    def seed(scope):
        scope.user = {"name": "a", "tmp": 1}

    def drop(scope):
        del scope.user["tmp"]

    result = run_stages(seed, drop)
    assert ops(result, 1) == [{"path": ["user"], "verb": "set", "value": {"name": "a"}}]


def test_list_mutation_commits_a_set_of_the_whole_key():
    """``append``, ``pop`` and item assignment on a list read from the scope commit a ``set``."""

    def seed(scope):
        scope.items = [1, 2, 3]
        scope.user = {"tags": ["a"]}

    def mutate(scope):
        scope.items.append(4)
        scope.items.pop(0)
        scope.items[0] = 20
        scope.user["tags"].append("b")

    result = run_stages(seed, mutate)
    assert ops(result, 1) == [
        {"path": ["items"], "verb": "set", "value": [20, 3, 4]},
        {"path": ["user"], "verb": "set", "value": {"tags": ["a", "b"]}},
    ]


def test_reading_without_changing_leaves_no_op():
    """Reading a container (even iterating it) is not a write."""

    def seed(scope):
        scope.items = [{"a": 1}]
        scope.user = {"n": {"m": 1}}

    def read(scope):
        _ = [dict(i) for i in scope.items]
        _ = scope.user["n"]["m"]

    result = run_stages(seed, read)
    assert ops(result, 1) == []
    assert result.commit_log[1].reads == ("items", "user")


def test_value_is_copied_at_write_time():
    """Mutating the original after writing it changes nothing in the state or the log."""
    original = {"a": [1]}
    item = {"b": 1}

    def seed(scope):
        scope.x = original
        scope.items = []
        scope.items.append(item)
        original["a"].append(2)
        item["b"] = 2

    result = run_stages(seed)
    assert result.state == {"x": {"a": [1]}, "items": [{"b": 1}]}
    assert ops(result, 0)[0]["value"] == {"a": [1]}


def test_committed_values_are_not_changed_by_later_stages_mutations():
    """A later stage mutating what it read leaves the earlier commit's value untouched."""

    def seed(scope):
        scope.items = [1]

    def grow(scope):
        scope.items.append(2)

    result = run_stages(seed, grow)
    assert ops(result, 0) == [{"path": ["items"], "verb": "set", "value": [1]}]
    assert result.commit_log[0].trace[0].value == [1]
    assert result.state == {"items": [1, 2]}


def test_non_json_safe_write_raises_at_the_write_naming_the_key():
    """Storing a non-JSON value raises ``ScopeWriteError`` at once, naming the key."""
    caught: list[str] = []

    def stage(scope):
        with pytest.raises(
            ScopeWriteError,
            match=exact(
                "Cannot write 'when': a datetime.datetime is not JSON-safe. State values must be "
                "JSON-safe (dict with str keys, list, str, int, float, bool, None)."
            ),
        ) as info:
            scope.when = datetime.datetime(2024, 1, 1)
        caught.append(info.value.key)
        with pytest.raises(ScopeWriteError, match=r"^Cannot write 'deep': a set is not JSON-safe at deep\.a\[1\]\. "):
            scope.deep = {"a": [1, {2}]}
        caught.append("deep")

    result = run_stages(stage)
    assert caught == ["when", "deep"]
    assert result.state == {}


def test_non_json_safe_nested_write_names_the_top_level_key():
    """A bad value put into a tracked dict or list names the key it was read from."""
    caught: list[str] = []

    def seed(scope):
        scope.user = {"name": "a"}
        scope.items = []

    def bad(scope):
        with pytest.raises(ScopeWriteError, match=r"^Cannot write 'user': an object is not JSON-safe\. "):
            scope.user["z"] = object()
        with pytest.raises(ScopeWriteError, match=r"^Cannot write 'items': a non-finite float \(nan\)\. "):
            scope.items.append(float("nan"))
        caught.append("ok")

    run_stages(seed, bad)
    assert caught == ["ok"]


def test_writing_a_run_input_key_is_refused():
    """An input key is read-only state: writing it raises the footprintjs message."""
    message = 'Cannot write to readonly input key "k" — use ctx.args to read input values'
    caught: list[str] = []

    def stage(scope):
        for write in (lambda: setattr(scope, "k", 2), lambda: scope.__setitem__("k", 2)):
            with pytest.raises(ReadonlyInputError, match=exact(message)):
                write()
        caught.append("refused")

    result = run_stages(stage, input={"k": 1})
    assert caught == ["refused"]
    assert result.state == {}


def test_ctx_args_is_a_read_only_view_of_the_input():
    """``ctx.args`` reads the input; setting, deleting or mutating it raises ``TypeError``."""
    seen: list[Any] = []

    def stage(scope, ctx):
        seen.extend([ctx.args["user"]["name"], ctx.args.user["tags"], dict(ctx.args.to_dict())])
        with pytest.raises(
            TypeError, match=exact("ctx.args is read-only: cannot set 'k'. Write state through the scope instead")
        ):
            ctx.args["k"] = 2
        with pytest.raises(
            TypeError, match=exact("ctx.args is read-only: cannot set 'k'. Write state through the scope instead")
        ):
            ctx.args.k = 2
        with pytest.raises(TypeError, match=exact("ctx.args is read-only: cannot delete 'k'")):
            del ctx.args["k"]
        with pytest.raises(
            TypeError, match=exact("ctx.args is read-only: cannot set 'name'. Write state through the scope instead")
        ):
            ctx.args["user"]["name"] = "y"
        with pytest.raises(AttributeError):
            ctx.args.user["tags"].append("z")

    inp = {"k": 1, "user": {"name": "x", "tags": ["a"]}}
    run_stages(stage, input=inp)
    assert seen == ["x", ("a",), inp]
    assert inp == {"k": 1, "user": {"name": "x", "tags": ["a"]}}


def test_stage_functions_may_take_scope_only_or_scope_and_ctx():
    """``fn(scope)`` and ``fn(scope, ctx)`` both work; ctx carries the ids."""
    seen: list[Any] = []

    def one(scope):
        seen.append("one")

    def two(scope, ctx):
        seen.append((ctx.stage_id, ctx.runtime_stage_id, len(ctx.run_id)))

    run_stages(one, two)
    assert seen == ["one", ("s1", "s1#1", 32)]


def test_equal_but_differently_typed_values_are_changes():
    """``True`` over ``1`` and ``1.0`` over ``1`` are writes (JSON tells them apart), not no-ops."""

    def seed(scope):
        scope.flag = 1
        scope.user = {"ratio": 1}
        scope.items = [0]

    def retype(scope):
        scope.flag = True
        scope.user["ratio"] = 1.0
        scope.items[0] = False

    result = run_stages(seed, retype)
    assert ops(result, 1) == [
        {"path": ["flag"], "verb": "set", "value": True},
        {"path": ["user"], "verb": "merge", "value": {"ratio": 1.0}},
        {"path": ["items"], "verb": "set", "value": [False]},
    ]
    assert [type(v) for v in (result.state["flag"], result.state["user"]["ratio"], result.state["items"][0])] == [
        bool,
        float,
        bool,
    ]


def test_nested_write_event_carries_only_the_changed_fields():
    """A nested assignment reports ``update`` with the touched top-level field; ``update()`` one event."""
    from flowchart import flow_chart

    class Writes:
        def __init__(self):
            self.seen = []

        def on_write(self, event):
            self.seen.append((event.key, event.operation, event.value))

    def seed(scope):
        scope.profile = {"name": "Ann", "prefs": {"a": 1}}

    def work(scope):
        scope.profile["prefs"]["b"] = 2
        scope.profile.update({"name": "Anne", "city": "Oslo"})

    rec = Writes()
    flow_chart("Seed", seed, "seed").add_function("Work", work, "work").build().run(recorders=[rec])
    assert rec.seen[1:] == [
        ("profile", "update", {"prefs": {"a": 1, "b": 2}}),
        ("profile", "update", {"name": "Anne", "city": "Oslo"}),
    ]


def test_missing_reads_join_the_commit_reads():
    """``getattr`` with a default, ``in`` and ``scope.get`` on absent keys record those keys as reads."""
    from flowchart import flow_chart

    def work(scope):
        getattr(scope, "a", None)
        assert "b" not in scope
        assert scope.get("c", 7) == 7
        scope.done = True

    result = flow_chart("Work", work, "work").build().run()
    assert result.commit_log[0].reads == ("a", "b", "c")


def test_scope_get_returns_the_value_or_the_default():
    """``scope.get(k, default)`` reads a present key and defaults a missing one; ``scope["get"]`` still works."""
    from flowchart import flow_chart

    seen = []

    def seed(scope):
        scope.a = 1
        scope["get"] = "a key named get"

    def work(scope):
        seen.extend([scope.get("a"), scope.get("zz", 5), scope.get("zz"), scope["get"]])

    flow_chart("Seed", seed, "seed").add_function("Work", work, "work").build().run()
    assert seen == [1, 5, None, "a key named get"]
