"""The private names of faust-streaming/aiokafka/mode the service leans on are all there."""

from __future__ import annotations

from detector.service.faust_io import _private_names, check_supported, missing_names


def test_the_installed_faust_and_aiokafka_have_every_internal_the_batch_path_uses() -> None:
    assert missing_names(_private_names()) == []
    check_supported()


def test_a_missing_internal_is_named() -> None:
    class Consumer:
        def _commit(self) -> None: ...

    names = [(Consumer, "_commit", "attr"), (Consumer, "_drain_messages", "attr"),
             (Consumer, "_read_offset", "source")]
    missing = missing_names(names)
    assert [m.rsplit(".", 1)[1] for m in missing] == ["_drain_messages", "_read_offset"]
