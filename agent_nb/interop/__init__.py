"""Bridges to other agent libraries; each imports its library, so import only the one you use."""
