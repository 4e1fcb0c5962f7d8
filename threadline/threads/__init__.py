"""Threads: conversations that messages belong to and runs execute on."""
