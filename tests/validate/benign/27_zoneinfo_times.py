from datetime import datetime
from zoneinfo import ZoneInfo

meeting = datetime(2024, 6, 1, 15, 0, tzinfo=ZoneInfo("Europe/Paris"))
for zone in ("America/New_York", "Asia/Tokyo", "UTC"):
    local = meeting.astimezone(ZoneInfo(zone))
    print(f"{zone:20} {local:%Y-%m-%d %H:%M}")
