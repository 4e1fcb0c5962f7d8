"""The current identity: which organization and which key a credential stands for."""
