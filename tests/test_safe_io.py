"""configurator.safe_io: bounded reads of regular files only, and no-clobber atomic writes."""

import io
import os
import threading

import pytest

from configurator.errors import InputError
from configurator.safe_io import InputTooLarge, NotRegularFile, read_file, read_stream, write_output


def test_read_stream_stops_at_the_cap():
    class Endless(io.RawIOBase):
        read_calls = 0

        def read(self, n=-1):
            Endless.read_calls += 1
            return b"\0" * n

    with pytest.raises(InputTooLarge):
        read_stream(Endless(), cap=3 << 20)
    assert Endless.read_calls <= 5  # stopped just past the cap, not at the end of the stream


def test_fifo_and_device_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile, match="FIFO"):
        read_file(fifo)
    link = tmp_path / "zero.yaml"
    link.symlink_to("/dev/zero")
    with pytest.raises(NotRegularFile, match="character device"):
        read_file(link)


def test_missing_and_folder(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_file(tmp_path / "nope")
    with pytest.raises(InputError, match="folder"):
        read_file(tmp_path)


def test_write_refuses_existing_and_symlinks(tmp_path):
    out = tmp_path / "r.json"
    write_output(out, "one")
    with pytest.raises(InputError, match="--force"):
        write_output(out, "two")
    assert out.read_text() == "one"
    write_output(out, "two", force=True)
    assert out.read_text() == "two"
    dangling = tmp_path / "d.json"
    dangling.symlink_to(tmp_path / "elsewhere.json")
    for force in (False, True):
        with pytest.raises(InputError, match="symbolic link"):
            write_output(dangling, "x", force=force)
    assert not (tmp_path / "elsewhere.json").exists()


def test_write_never_onto_an_input(tmp_path):
    src = tmp_path / "in.yaml"
    src.write_text("kind: Pod\n")
    with pytest.raises(InputError, match="inputs"):
        write_output(src, "report", force=True, inputs=(str(src),))
    assert src.read_text() == "kind: Pod\n"


def test_racing_writers_leave_one_complete_file(tmp_path):
    out = tmp_path / "race.json"
    payloads = [f"x{i:02d}" * 50_000 for i in range(20)]
    results: list[str] = []

    def write(p: str) -> None:
        try:
            write_output(out, p)
            results.append("won")
        except InputError:
            results.append("refused")

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("won") == 1 and results.count("refused") == 19
    assert out.read_text() in payloads
    assert [p.name for p in tmp_path.iterdir()] == ["race.json"]  # no temporary file left behind
