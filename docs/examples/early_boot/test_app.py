import pytest

import app


@pytest.mark.urandom(policy="pep524", timeout=0.5)
def test_naive_start_up_hangs_at_early_boot_under_pep524():
    # The timeout turns the hang into an error after 0.5 s, so the test suite itself never hangs.
    with pytest.raises(BlockingIOError, match=r"waited 0.5 s"):
        app.create_server_naive()


@pytest.mark.urandom(policy="pep522")
def test_naive_start_up_crashes_at_early_boot_under_pep522():
    with pytest.raises(BlockingIOError, match="system random number generator is not ready"):
        app.create_server_naive()


def test_fixed_start_up_waits_for_the_kernel_then_starts(system_rng, urandom_policy):
    urandom_policy("pep522")
    system_rng.ready_after(0.5)  # the kernel CRNG initialises half a second into the test
    server = app.create_server()
    try:
        assert len(server.session_key) == 32
        assert system_rng.state == "ready"
    finally:
        server.server_close()
