"""Building wheels: a pure planner (BuildJob → BuildPlan of steps) and the executors that run it."""
