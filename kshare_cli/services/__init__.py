"""What a command or a screen asks for, above the admin layer: evaluations over its models.

Nothing here prints or parses options; ``cli/`` and ``tui/`` call in, ``render/``
draws the results.
"""
