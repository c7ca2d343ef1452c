"""Textual dashboard screens over the same services as the commands."""
