# The API's doctests run through the engines; they are collected once every engine is in place.
collect_ignore = ["src/chainrules/api.py"]
