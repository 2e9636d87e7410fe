"""The command judgment: a command is approved only when every part of it is known safe.

``shell`` reads a command line into simple commands with a real shell grammar; ``judge`` looks each up
in the policy's ``commands:`` table and places every path it touches (``paths``). The screen
classifier, the ACP classifier and replay all call :func:`judge.judge_command` through
``supervisor.classify``'s risk assessment."""
