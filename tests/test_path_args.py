"""Path arguments: one path is one path, never the characters of a string."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import pytest

from bundled_examples import EXAMPLES
from tracescore.criteria import criterion_class
from tracescore.exceptions import InputError
from tracescore.goldens import golden_files, load_goldens
from tracescore.importer import ImportStats, import_paths
from tracescore.path_args import expand_paths, path_list, real_path
from tracescore.replay import replay


class BytesPath:
    """An os.PathLike whose path is bytes: text paths only are taken."""

    def __fspath__(self) -> bytes:
        return b"traces"


def test_one_path_is_a_list_of_one() -> None:
    assert path_list("traces/") == ["traces/"]
    assert path_list(Path("traces")) == ["traces"]
    assert path_list(PurePosixPath("a/b.jsonl")) == ["a/b.jsonl"]


def test_iterables_of_paths_keep_their_order() -> None:
    assert path_list(["b", Path("a"), "-"]) == ["b", "a", "-"]
    assert path_list(p for p in ("x", "y")) == ["x", "y"]
    assert path_list(()) == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            b"traces",
            "paths: expected a path (str or os.PathLike) or an iterable of paths; got bytes",
        ),
        (3, "paths: expected a path (str or os.PathLike) or an iterable of paths; got int"),
        (["a", 3], "paths[1]: expected a path (str or os.PathLike), got int"),
        ([b"a"], "paths[0]: expected a path (str or os.PathLike), got bytes"),
        (BytesPath(), "paths: expected a text path, got bytes"),
        (["a", BytesPath()], "paths[1]: expected a text path, got bytes"),
    ],
)
def test_what_is_not_a_path_is_refused_by_name(value: object, message: str) -> None:
    with pytest.raises(TypeError) as err:
        path_list(value)  # type: ignore[arg-type]  # what an untyped caller may pass
    assert str(err.value) == message


def test_the_parameter_is_named() -> None:
    with pytest.raises(TypeError, match=r"^goldens\[0\]: "):
        path_list([1], parameter="goldens")  # type: ignore[list-item]  # on purpose


def test_real_path_resolves_links(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text("")
    os.symlink(tmp_path / "a.jsonl", tmp_path / "link.jsonl")
    assert real_path(str(tmp_path / "link.jsonl")) == os.path.realpath(tmp_path / "a.jsonl")


def test_real_path_falls_back_to_the_absolute_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Python 3.11's realpath raises on a link it may not read (EACCES on /proc/1/cwd in
    # a container); which file that is cannot be arranged portably, so the error is.
    def refuse(path: str) -> str:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(os.path, "realpath", refuse)
    monkeypatch.chdir(tmp_path)
    assert real_path("x/y.jsonl") == str(tmp_path / "x" / "y.jsonl")


def test_load_goldens_reads_one_directory_given_as_a_string() -> None:
    # A str used to be read as its characters: "/" first, the whole file system.
    goldens = str(EXAMPLES / "goldens")
    as_str = load_goldens(goldens)
    assert [g.eval_set_id for g in as_str] == [g.eval_set_id for g in load_goldens([goldens])]
    assert [g.path for g in load_goldens(Path(goldens))] == [g.path for g in as_str]
    assert golden_files(Path(goldens)) == golden_files([goldens])
    with pytest.raises(TypeError, match=r"^paths: .*got int$"):
        load_goldens(7)  # type: ignore[arg-type]  # on purpose


def test_import_and_replay_take_one_path() -> None:
    traces = EXAMPLES / "traces"
    one = [i.trace_id for i in import_paths(str(traces), ImportStats())]
    assert one == [i.trace_id for i in import_paths([traces], ImportStats())]
    assert one
    rouge = criterion_class("response_match_score")(threshold=0.5)
    result = replay(traces, [rouge], goldens=EXAMPLES / "goldens")
    listed = replay([str(traces)], [rouge], goldens=load_goldens([str(EXAMPLES / "goldens")]))
    assert [r.invocation.trace_id for r in result.invocations] == [
        r.invocation.trace_id for r in listed.invocations
    ]
    assert [c.status for c in result.cases] == [c.status for c in listed.cases]
    assert result.stats.files == len(list(traces.iterdir())) == 4


def test_a_directory_that_cannot_be_listed_is_an_input_error(
    tmp_path: Path, refuse_listing: Callable[[Path], None]
) -> None:
    # os.walk used to skip it silently, losing its files.
    for name in ["top/a.jsonl", "top/locked/b.jsonl"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    refuse_listing(tmp_path / "top" / "locked")
    with pytest.raises(InputError) as err:
        expand_paths(str(tmp_path / "top"))
    assert str(err.value) == f"{tmp_path}/top/locked: cannot list directory: Permission denied"


def test_expand_paths_directories_globs_and_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ["b/2.jsonl", "b/1.jsonl", "a.json", ".hidden.jsonl", ".git/x.jsonl", "b/c/3.gz"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    assert expand_paths(["."]) == ["./a.json", "./b/1.jsonl", "./b/2.jsonl", "./b/c/3.gz"]
    assert expand_paths(["b/*.jsonl", "-", "a.json", "b/1.jsonl"]) == [
        "b/1.jsonl", "b/2.jsonl", "-", "a.json",
    ]  # fmt: skip
    assert expand_paths(["**/*.gz"]) == ["b/c/3.gz"]
    assert expand_paths(["b"]) == ["b/1.jsonl", "b/2.jsonl", "b/c/3.gz"]
    assert expand_paths([".hidden.jsonl"]) == [".hidden.jsonl"]  # named explicitly
    # One file under two spellings (or through a link) is read once, as first named.
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "a.json")
    assert expand_paths(["b/1.jsonl", "./b/1.jsonl", str(tmp_path / "b/1.jsonl")]) == ["b/1.jsonl"]
    assert expand_paths(["a.json", "link.jsonl", "-", "-"]) == ["a.json", "-"]
    with pytest.raises(InputError, match=r"nope\.jsonl: no such file or directory"):
        expand_paths(["a.json", "nope.jsonl"])
    with pytest.raises(InputError, match=r"\*.parquet: no file matches"):
        expand_paths(["*.parquet"])
    with pytest.raises(InputError, match="empty: no files in this directory"):
        expand_paths(["empty"])
