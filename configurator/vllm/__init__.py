"""Version-keyed vLLM behaviour: releases, defaults, the flag table and vLLM's own messages."""
