"""Adapters for the agent frameworks people already use (LangChain, LangGraph, Ray).

Each submodule imports its framework, installed with the matching extra
(``pip install "maclaw_fast[langchain]"``, ``"maclaw_fast[ray]"``).
"""
