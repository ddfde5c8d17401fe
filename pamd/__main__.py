from pamd.cli import main

raise SystemExit(main())
