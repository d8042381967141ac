"""Code written for mem0, switched to maclaw_fast by changing one import.

    python examples/mem0_switch.py [--store DIR]

Runs without an LLM (``infer=False``); with ``OPENAI_API_KEY`` (or ``MACLAW_LLM_*``) set, pass
``--infer`` and facts are extracted by the LLM as mem0 does.
"""

from __future__ import annotations

import argparse

from maclaw_fast.compat.mem0 import Memory  # was: from mem0 import Memory


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", help="directory for the memories (default: in memory)")
    ap.add_argument("--infer", action="store_true", help="extract facts with the LLM")
    args = ap.parse_args(argv)
    config = {"vector_store": {"provider": "maclaw", "config": {"path": args.store}}} \
        if args.store else None
    m = Memory.from_config(config) if config else Memory()

    # --- from here on, mem0 code as it was ---
    added = m.add([{"role": "user", "content": "I'm working on improving my tennis skills."},
                   {"role": "assistant", "content": "Great, I'll suggest online courses."}],
                  user_id="alice", metadata={"category": "hobbies"}, infer=args.infer)
    memory_id = added["results"][0]["id"]
    m.update(memory_id=memory_id, data="Likes to play tennis on weekends")
    related = m.search(query="What are Alice's hobbies?", filters={"user_id": "alice"}, top_k=3)
    everything = m.get_all(filters={"user_id": "alice"})
    history = m.history(memory_id=memory_id)
    for hit in related["results"]:
        print(f"{hit['score']:.3f}  {hit['memory']}")
    print(f"{len(everything['results'])} memories; history of {memory_id}:",
          [h["event"] for h in history])
    m.close()
    return {"related": related, "all": everything, "history": history}


if __name__ == "__main__":
    main()
