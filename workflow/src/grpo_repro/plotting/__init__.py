"""Plotting (figures stage and final plots): one shared style (style.py) and per-figure plot
functions that only read CSV files written by compute steps (figures.py)."""
