"""Every workflow test that starts the scripted agent asserts, afterwards, that no key reached it
while no prompt was live (instructions typed into its input box are not stray)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.live_helpers import assert_no_stray_keys
from tests.workflow import e2e_helpers


@pytest.fixture(autouse=True)
def no_stray_keys() -> Iterator[None]:
    e2e_helpers.STARTED.clear()
    yield
    assert_no_stray_keys(*e2e_helpers.STARTED)
