"""What to check: ops declared in check modules, the cases they expand to, and the project they come from."""
