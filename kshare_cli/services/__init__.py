"""What a command or a screen asks for: one ``Session`` (settings, clients, deadline), and
the calls and evaluations made over it.

``cli/`` and ``tui/`` reach the admin, consumer and pipeline layers only through
here: each service module re-exports the domain types it returns (its
``__all__``), while their definitions keep their one home below. Nothing here
prints or parses options; ``render/`` draws the results.
"""
