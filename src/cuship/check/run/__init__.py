"""Running a check: the session, the plan and its execution on worker processes (started, or forked from one that has imported the engines)."""
