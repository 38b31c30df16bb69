"""Scenarios written once and run on both backends: the simulator and the real control plane.

:mod:`.catalogue` names every scenario (written in :mod:`.demo_scenarios` and
:mod:`.unhappy_scenarios` and :mod:`.gpu_scenarios`, sharing :mod:`.common`; the GPU pools and
what is observed of their scheduling in :mod:`.scheduling`), :mod:`.world` is the interface they act
through, :mod:`.simworld` and ``tests/e2e/clusterworld.py`` (it needs the e2e harness) its two
implementations, :mod:`.observe` what is observed and how it is normalised.
``tests/e2e/test_scenarios.py`` runs every scenario on both and compares;
``tests/unit/sim/test_scenarios_on_simulator.py`` runs them on the simulator alone.
"""
