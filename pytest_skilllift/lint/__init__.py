"""Static SKILL.md analysis (seed 003, layer 1): no model needed."""
