#!/bin/bash
# The verifier: pytest on what the agent left in /app; the per-test outcomes as JUnit XML,
# the reward 1 when every test passed, else 0.
mkdir -p /logs/verifier
cd /tests || exit 1
python3 -m pytest -q -p no:cacheprovider --junitxml=/logs/verifier/junit.xml test_outputs.py
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
