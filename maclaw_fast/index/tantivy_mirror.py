"""tantivy as the BM25 index of record (``Bm25Index`` keeps its postings in step with the numba
mirror; ``Bm25Index.tantivy_scores`` answers from it)."""

from __future__ import annotations

import tantivy


class TantivyMirror:
    """A tantivy RAM index over pre-tokenised text: whitespace tokenizer, term frequencies, and the
    caller's key as a raw term for exact deletes. Committed lazily, before a search; the writer
    (a 15 MB heap budget and an indexing thread) exists only between a change and the next
    search."""

    def __init__(self) -> None:
        sb = tantivy.SchemaBuilder()
        # a raw text key: tantivy-py's delete-by-term does not match u64 fields
        sb.add_text_field("key", stored=True, tokenizer_name="raw", index_option="basic")
        sb.add_text_field("body", stored=False, tokenizer_name="whitespace", index_option="freq")
        self.schema = sb.build()
        self.index = tantivy.Index(self.schema)
        self.writer = None
        self.dirty = False
        self.deletes = 0  # deletes since the build: tantivy's statistics still count them

    def _writer(self):
        if self.writer is None:
            self.writer = self.index.writer(heap_size=15_000_000, num_threads=1)
        return self.writer

    def add(self, key: int, tokens: list[str], replace: bool = True) -> None:
        self._writer()
        if replace:
            self.writer.delete_documents_by_term("key", str(key))
        doc = tantivy.Document()
        doc.add_text("key", str(key))
        doc.add_text("body", " ".join(tokens))
        self.writer.add_document(doc)
        self.dirty = True

    def remove(self, key: int) -> None:
        self._writer().delete_documents_by_term("key", str(key))
        self.deletes += 1
        self.dirty = True

    def scores(self, tokens: list[str]) -> dict[int, float]:
        if self.dirty:
            self.writer.commit()
            self.writer = None  # released until the next change
            self.index.reload()
            self.dirty = False
        uniq = list(dict.fromkeys(tokens))
        if not uniq:
            return {}
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, "body", t,
                                                             index_option="freq"))
             for t in uniq])
        searcher = self.index.searcher()
        n = max(searcher.num_docs, 1)
        hits = searcher.search(query, limit=n).hits
        return {int(searcher.doc(addr)["key"][0]): float(score) for score, addr in hits}
