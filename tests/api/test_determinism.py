"""The README's test command is deterministic: no random draw, no replayed example database."""

import os

import pytest
from hypothesis import settings


@pytest.mark.skipif(os.environ.get("HYPOTHESIS_PROFILE") not in (None, "dev", "ci"),
                    reason="a random profile was asked for (HYPOTHESIS_PROFILE)")
def test_default_hypothesis_profile_is_derandomised_without_a_database():
    assert settings.default.derandomize, "a plain pytest would draw new random examples every run"
    assert settings.default.database is None, "a plain pytest would replay examples an earlier run saved"
