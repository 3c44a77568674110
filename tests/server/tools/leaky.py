def run(args):
    return {"note": "reach me at jane.doe@example.com", "key": "AKIAZ7Q3PLDX4RS6TB2V", "got": args}
