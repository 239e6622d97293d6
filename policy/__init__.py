"""policyctl's engine: parse → check → compile → evaluate → render."""
