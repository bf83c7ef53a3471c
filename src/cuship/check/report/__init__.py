"""A check run's results: per case and group, rendered as text, JSON and JUnit, and kept as baselines."""
