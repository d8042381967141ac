"""Memory maintenance (design §10): the pipeline, compression, promotion, reflection, knowledge
extraction, conflict detection and the LLM recall filter."""

from maclaw_fast.maintenance.compress import CompressReport, compress, exact_dedup
from maclaw_fast.maintenance.conflicts import ConflictDetector, ConflictReport
from maclaw_fast.maintenance.extractor import ExtractReport, KnowledgeExtractor
from maclaw_fast.maintenance.filter import recall_with_llm_filter
from maclaw_fast.maintenance.pipeline import (BackupReport, Maintenance, MaintenanceReport,
                                              write_backup)
from maclaw_fast.maintenance.promote import PromoteReport, promote
from maclaw_fast.maintenance.reflect import ReflectReport, reflect

__all__ = [
    "BackupReport", "CompressReport", "ConflictDetector", "ConflictReport", "ExtractReport",
    "KnowledgeExtractor", "Maintenance", "MaintenanceReport", "PromoteReport", "ReflectReport",
    "compress", "exact_dedup", "promote", "recall_with_llm_filter", "reflect", "write_backup",
]
