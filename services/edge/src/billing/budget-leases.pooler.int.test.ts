// Paid calls' budget leases across edges, once more through PgBouncer in transaction mode (throughPooler).
import { throughPooler } from '@gensvc/testing';
import './budget-leases.int.test';

throughPooler();
