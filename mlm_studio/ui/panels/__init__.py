"""The workbench panels, one per step of the workflow."""
