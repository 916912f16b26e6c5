// Lease charges (gensvc_lease_charge), once more through PgBouncer in transaction mode (throughPooler).
import { throughPooler } from '@gensvc/testing';
import './lease-charge.int.test';

throughPooler();
