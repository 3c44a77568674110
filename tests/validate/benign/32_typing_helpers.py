from typing import Dict, List, Optional

def index_by_key(rows: List[Dict[str, str]], key: str) -> Dict[str, Dict[str, str]]:
    return {row[key]: row for row in rows if key in row}

def first(values: List[int]) -> Optional[int]:
    return values[0] if values else None

print(index_by_key([{"id": "a"}, {"id": "b"}], "id"), first([]))
