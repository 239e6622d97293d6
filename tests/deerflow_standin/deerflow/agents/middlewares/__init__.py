"""Mirrors ``agents/middlewares/``: the middlewares the guard is placed among."""
