"""The orchestrator restarts a replica process that dies; queries carry on after it."""

from __future__ import annotations

import os
import signal
import time

from tests.integration.server import WeirServer


def test_killed_replica_is_restarted(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE TABLE rr (id int)")
        c.execute("INSERT INTO rr VALUES (1), (2), (3)")
        assert c.execute("SELECT count(*) FROM rr").fetchone() == (3,)
        pids = server.replica_pids()
        assert len(pids) == 1
        os.kill(pids[0], signal.SIGKILL)
        deadline = time.time() + 120
        while time.time() < deadline:
            new = server.replica_pids()
            if new and new != pids:
                break
            time.sleep(0.5)
        assert server.replica_pids() and server.replica_pids() != pids
        # the SELECT waits for the restarted replica (or is retried on it) and answers
        assert c.execute("SELECT sum(id) FROM rr").fetchone() == (6,)
        c.execute("INSERT INTO rr VALUES (4)")
        assert c.execute("SELECT count(*) FROM rr").fetchone() == (4,)
