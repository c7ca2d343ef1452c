"""Typer commands: parse, validate, call one service, hand the result to a renderer."""
