"""Collection: prompt files, trigger files and skill-creator evals become test items."""
